"""The repair rule: when does a task's try repair failed sources instead of resuming?

Clearing a task instance (UI or REST) sets ``max_tries = try_number + retries``,
so the first try after a clear is ``max_tries - retries + 1`` (the rule Airflow's
own task runner uses for the first reschedule date). An automatic retry has a
higher try number. The very first try of a run also satisfies the rule; it has
``try_number == 1`` and nothing to repair. Imports neither airflow nor ray.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

__all__ = ["RepairMode", "is_first_try_after_clear", "should_repair"]


class RepairMode(StrEnum):
    """``repair=`` of the operators: ``"on_clear"`` (default), ``"always"`` or ``False``."""

    ON_CLEAR = "on_clear"
    ALWAYS = "always"
    NEVER = "never"

    @classmethod
    def parse(cls, value: object) -> RepairMode:
        """``False``/``None`` mean never, ``True`` means on_clear; other values raise."""
        if value is False or value is None:
            return cls.NEVER
        if value is True:
            return cls.ON_CLEAR
        try:
            return cls(str(value))
        except ValueError:
            raise ValueError(
                f"repair must be 'on_clear', 'always' or False, got {value!r}"
            ) from None


def _as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def is_first_try_after_clear(ti: Any, retries: int | None) -> bool:
    """True on the first try after a manual clear (never on try 1, never on a retry).

    ``ti`` needs integer ``try_number`` and ``max_tries``; without them (a test double,
    an old Airflow) the answer is False: a clear cannot be told from a retry.
    """
    try_number = _as_int(getattr(ti, "try_number", None))
    max_tries = _as_int(getattr(ti, "max_tries", None))
    if try_number is None or max_tries is None or try_number <= 1:
        return False
    return try_number == max_tries - int(retries or 0) + 1


def should_repair(mode: RepairMode, ti: Any, retries: int | None) -> bool:
    """Whether this try repairs (given that there are committed failed sources)."""
    if mode is RepairMode.NEVER:
        return False
    if mode is RepairMode.ALWAYS:
        return True
    return is_first_try_after_clear(ti, retries)
