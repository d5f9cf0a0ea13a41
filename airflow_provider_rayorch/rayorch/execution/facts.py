"""Facts about remote values that the driver needs to schedule, reported by workers.

The core splits an expand's value and reads a filter's mask; on Ray those values
stay in the object store, so the worker that made a value reports its length
(or its type's name when ``F.expand`` cannot split it) and its truth with the
batch's reply. Values reached through expands (an expand of an expand's child,
a filter whose mask is an expanded list) need the same facts one level down:
``PortNeeds`` says, per Call output Port, to which depth, and ``fact_tree``
computes them. The driver never fetches a payload to schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..program.plan import NodeKind
from ..runtime.sequences import children_of, expansion_length

if TYPE_CHECKING:
    from ..program.plan import Plan

__all__ = ["PortNeeds", "fact_tree", "length_fact", "needs_by_call"]


@dataclass(frozen=True, slots=True)
class PortNeeds:
    """Facts wanted of each value of one Call output Port.

    ``lengths`` is how many levels need lengths (1: the value's own, 2: also each
    element's, ...); ``truths`` the levels whose truth a filter reads (0: the value
    itself, 1: each element, ...)."""

    lengths: int = 0
    truths: frozenset[int] = frozenset()

    def __reduce__(self) -> tuple[Any, ...]:
        return (PortNeeds, (self.lengths, self.truths))

    @property
    def depth(self) -> int:
        """Levels the facts reach (0: none)."""
        return max(self.lengths, max(self.truths, default=-1) + 1)

    @property
    def flat(self) -> bool:
        """Only the value's own facts are wanted (the common, cheap case)."""
        return self.depth <= 1


def length_fact(value: Any) -> int | str:
    """The number of children ``F.expand`` makes of ``value`` or, when it cannot be
    split, its type's name (for the error message)."""
    n = expansion_length(value)
    return type(value).__name__ if n is None else n


def fact_tree(value: Any, needs: PortNeeds, level: int = 1) -> list[Any] | None:
    """Facts of the elements of ``value`` (``level`` is theirs): one
    ``[length, truth, deeper]`` per element, or None when no deeper level is needed
    or ``value`` cannot be split."""
    if level >= needs.depth:
        return None
    elements = children_of(value)
    if elements is None:
        return None
    want_length = level < needs.lengths
    want_truth = level in needs.truths
    return [
        [
            length_fact(e) if want_length else None,
            bool(e) if want_truth else None,
            fact_tree(e, needs, level + 1),
        ]
        for e in elements
    ]


def needs_by_call(plan: Plan) -> dict[int, tuple[PortNeeds, ...]]:
    """For each Call, the facts each output Port's values must come back with."""
    lengths: dict[int, int] = {}
    truths: dict[int, set[int]] = {}

    def walk(origin: int, port: int, level: int, gathered: int) -> None:
        for node in plan.consumers(port):
            kind = node.kind
            if kind is NodeKind.EXPAND:
                out = node.outputs[node.inputs.index(port)]
                if gathered:  # expanding a reduce's list: its members, as they were
                    walk(origin, out, level, gathered - 1)
                else:
                    lengths[origin] = max(lengths.get(origin, 0), level + 1)
                    walk(origin, out, level + 1, 0)
            elif kind is NodeKind.FILTER:
                if port == node.inputs[1] and not gathered:
                    truths.setdefault(origin, set()).add(level)
                if port == node.inputs[0]:
                    walk(origin, node.outputs[0], level, gathered)
            elif kind is NodeKind.BROADCAST:
                walk(origin, node.outputs[0], level, gathered)
            elif kind is NodeKind.REDUCE and port in node.inputs:
                out = node.outputs[node.inputs.index(port)]
                walk(origin, out, level, gathered + 1)

    result: dict[int, tuple[PortNeeds, ...]] = {}
    for node in plan.calls:
        for port in node.outputs:
            walk(port, port, 0, 0)
        result[node.id] = tuple(
            PortNeeds(lengths.get(p, 0), frozenset(truths.get(p, ()))) for p in node.outputs
        )
    return result
