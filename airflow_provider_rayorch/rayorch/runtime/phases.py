"""Grain phases and the one transition table every phase change goes through."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from ..errors import InvalidTransition

if TYPE_CHECKING:
    from .lineage import Grain

__all__ = ["TRANSITIONS", "GrainEvent", "GrainPhase", "move", "read_story"]


class GrainPhase(enum.Enum):
    # Members are singletons: hashing by identity (in C) instead of Enum's
    # Python-level hash of the name keeps the transition table cheap.
    __hash__ = object.__hash__

    READY = "ready"
    """In its Call's FIFO ready queue."""
    IN_FLIGHT = "in_flight"
    """Part of a dispatched batch, under its current generation."""
    DONE = "done"
    """Committed: its outputs hold values or a failure."""
    SUPPRESSED = "suppressed"
    """A sibling's GroupFailure made it moot; never committed."""


class GrainEvent(enum.Enum):
    __hash__ = object.__hash__

    DISPATCH = "dispatch"
    COMMIT = "commit"
    RETRY = "retry"
    SUPPRESS = "suppress"

    @property
    def letter(self) -> str:
        """One letter per event, so a Grain's story is a short (untracked) string."""
        return _LETTERS[self]


_LETTERS = {event: event.value[0] for event in GrainEvent}
_EVENTS = {letter: event for event, letter in _LETTERS.items()}


def read_story(story: str) -> list[str]:
    """Spell out a Grain's story: ``"dr"`` -> ``["dispatch (generation 1)", "retry"]``."""
    lines, gen = ["created ready"], 0
    for letter in story:
        event = _EVENTS[letter]
        if event is GrainEvent.DISPATCH:
            gen += 1
            lines.append(f"dispatch (generation {gen})")
        else:
            lines.append(event.value)
    return lines


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
        raise InvalidTransition(
            grain.describe(), grain.phase.value, event.value, grain.story_lines()
        )
    grain.story += _LETTERS[event]
    grain.phase = nxt
