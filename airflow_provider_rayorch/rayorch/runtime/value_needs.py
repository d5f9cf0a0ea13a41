"""What the core will need to know about a Call's output values, without holding them.

An expand reads a value's length (and, nested, its elements' lengths), a filter
its mask's truth. A backend whose values stay remote (Ray) has the worker that
made a value report these facts with the batch. ``port_needs`` follows a Call
output Port through the structural nodes downstream, one rule per node kind,
and says to which depth lengths are needed and at which levels truths.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..program.plan import NodeKind

if TYPE_CHECKING:
    from ..program.plan import Node, Plan

__all__ = ["PortNeeds", "port_needs"]


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


@dataclass(slots=True)
class _Wanted:
    lengths: int = 0
    truths: set[int] = field(default_factory=set)


#: Where a value sits: (Port, level inside the Call's value, gathers not yet undone).
_At = tuple[int, int, int]
_Rule = Callable[["Node", _At, _Wanted], list[_At]]


def _through_expand(node: Node, at: _At, wanted: _Wanted) -> list[_At]:
    port, level, gathered = at
    out = node.outputs[node.inputs.index(port)]
    if gathered:  # expanding a reduce's list: its members, as they were
        return [(out, level, gathered - 1)]
    wanted.lengths = max(wanted.lengths, level + 1)
    return [(out, level + 1, 0)]


def _through_filter(node: Node, at: _At, wanted: _Wanted) -> list[_At]:
    port, level, gathered = at
    if port == node.inputs[1] and not gathered:
        wanted.truths.add(level)
    return [(node.outputs[0], level, gathered)] if port == node.inputs[0] else []


def _through_broadcast(node: Node, at: _At, wanted: _Wanted) -> list[_At]:
    _, level, gathered = at
    return [(node.outputs[0], level, gathered)]


def _through_reduce(node: Node, at: _At, wanted: _Wanted) -> list[_At]:
    port, level, gathered = at
    if port not in node.inputs:  # its ``members`` Port: only presence is read
        return []
    return [(node.outputs[node.inputs.index(port)], level, gathered + 1)]


#: One rule per structural node kind; a Call's outputs are values of their own.
RULES: dict[NodeKind, _Rule] = {
    NodeKind.EXPAND: _through_expand,
    NodeKind.FILTER: _through_filter,
    NodeKind.BROADCAST: _through_broadcast,
    NodeKind.REDUCE: _through_reduce,
}


def port_needs(plan: Plan, port: int) -> PortNeeds:
    """The facts the core needs of each value of Call output ``port``."""
    wanted = _Wanted()
    todo: list[_At] = [(port, 0, 0)]
    while todo:
        at = todo.pop()
        for node in plan.consumers(at[0]):
            rule = RULES.get(node.kind)
            if rule is not None:
                todo += rule(node, at, wanted)
    return PortNeeds(wanted.lengths, frozenset(wanted.truths))
