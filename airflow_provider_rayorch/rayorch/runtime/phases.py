"""Grain phases and the one transition table every phase change goes through."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from ..errors import InvalidTransition

if TYPE_CHECKING:
    from .lineage import Grain

__all__ = ["TRANSITIONS", "GrainEvent", "GrainPhase", "move"]


class GrainPhase(enum.Enum):
    READY = "ready"
    """In its Call's FIFO ready queue."""
    IN_FLIGHT = "in_flight"
    """Part of a dispatched batch, under its current generation."""
    DONE = "done"
    """Committed: its outputs hold values or a failure."""
    SUPPRESSED = "suppressed"
    """A sibling's GroupFailure made it moot; never committed."""


class GrainEvent(enum.Enum):
    DISPATCH = "dispatch"
    COMMIT = "commit"
    RETRY = "retry"
    SUPPRESS = "suppress"


R, F, D, S = GrainPhase.READY, GrainPhase.IN_FLIGHT, GrainPhase.DONE, GrainPhase.SUPPRESSED

#: (phase, event) -> next phase. Anything else is an ``InvalidTransition``.
TRANSITIONS: dict[tuple[GrainPhase, GrainEvent], GrainPhase] = {
    (R, GrainEvent.DISPATCH): F,
    (R, GrainEvent.SUPPRESS): S,
    (F, GrainEvent.COMMIT): D,
    (F, GrainEvent.RETRY): R,
    (F, GrainEvent.SUPPRESS): S,
}


def move(grain: Grain, event: GrainEvent) -> None:
    """Apply ``event`` to ``grain`` through ``TRANSITIONS``, recording it in its story."""
    nxt = TRANSITIONS.get((grain.phase, event))
    if nxt is None:
        raise InvalidTransition(grain.describe(), grain.phase.value, event.value, grain.story_lines())
    grain.story.append((event, grain.gen))
    grain.phase = nxt
