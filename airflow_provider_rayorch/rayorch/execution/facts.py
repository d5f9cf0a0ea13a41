"""Facts about remote values that the driver needs to schedule, reported by workers.

The core splits an expand's value and reads a filter's mask; on Ray those values
stay in the object store, so the worker that made a value reports its length
(or its type's name when ``F.expand`` cannot split it) and its truth with the
batch's reply. Values reached through expands (an expand of an expand's child,
a filter whose mask is an expanded list) need the same facts one level down:
the lowering says, per Call output Port, to which depth
(``runtime.lowering.lower(plan).needs_by_call()``, a ``PortNeeds`` each), and
``fact_tree`` computes them. The driver never fetches a payload to schedule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..runtime.sequences import children_of, expansion_length

if TYPE_CHECKING:
    from ..runtime.value_needs import PortNeeds

__all__ = ["fact_tree", "length_fact"]


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
