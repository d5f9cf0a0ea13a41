"""Row outcomes: what a UDF may return for one row, and how a source row ends."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["GroupFailure", "ItemOutcome", "OutputIssue", "RecordFailure"]


class ItemOutcome(enum.Enum):
    """How one Item (a Port's value for one Entity) ended."""

    PRESENT = "present"
    """It has a value."""
    DROPPED = "dropped"
    """A filter removed it (or an input it needed)."""
    FAILED = "failed"
    """Its own computation failed."""
    SUPPRESSED = "suppressed"
    """A failure elsewhere made it moot."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class RecordFailure:
    """Returned by a UDF in place of one row's result: that row FAILS with ``cause``."""

    cause: str

    def __post_init__(self) -> None:
        if not isinstance(self.cause, str):
            object.__setattr__(self, "cause", str(self.cause))


@dataclass(frozen=True, slots=True)
class GroupFailure:
    """Like ``RecordFailure``, and the row's siblings (same direct parent) still
    queued for the same Call are SUPPRESSED without being dispatched."""

    cause: str

    def __post_init__(self) -> None:
        if not isinstance(self.cause, str):
            object.__setattr__(self, "cause", str(self.cause))


@dataclass(frozen=True, slots=True)
class OutputIssue:
    """Stands in ``RunResult.outputs`` for a source row that has no value.

    ``cause`` names where the failure began, for example ``doc[17]/page[3]: blank``;
    for a DROPPED row it names where it was dropped (``doc[4]: dropped by filter``).
    """

    outcome: ItemOutcome
    cause: str | None = None
