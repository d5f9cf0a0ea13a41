"""Items: giving an Entity's slot its outcome, and what an Item inherits from its inputs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InvalidTransition
from ..outcomes import ItemOutcome
from .lineage import PENDING, Issue

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .lineage import Entity

__all__ = ["carry", "first_issue", "settle", "settle_all"]

_DROPPED = ItemOutcome.DROPPED


def settle(e: Entity, slot: int, content: Any) -> None:
    """Give Item ``slot`` of ``e`` its outcome, then fire what waited on it."""
    items = e.items
    if items[slot] is not PENDING:
        raise InvalidTransition(
            f"Item {e.domain.labels[slot]} of {e.path()}",
            "settled",
            "settle",
            [f"held {items[slot]!r}", f"offered {content!r}"],
        )
    items[slot] = content
    e.mb.outstanding -= 1
    for handler in e.domain.consumers[slot]:
        handler(e)


def settle_all(e: Entity, slots: Iterable[int], content: Any) -> None:
    for slot in slots:
        settle(e, slot, content)


def carry(content: Any) -> Any:
    """What an Item copied from ``content`` holds (an Issue propagates)."""
    return content.propagated() if type(content) is Issue else content


def first_issue(items: list[Any], slots: Iterable[int]) -> Issue | None:
    """The Issue an Item reading ``slots`` inherits: a failure first, else a drop."""
    found: Issue | None = None
    for slot in slots:
        content = items[slot]
        if type(content) is Issue:
            if content.outcome is not _DROPPED:
                return content
            if found is None:
                found = content
    return found
