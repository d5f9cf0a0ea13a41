"""The repair and resume rules: when does a task's try repair failed sources, and
when does it resume a run whose Ray job ended before the work was done?

Repair: clearing a task instance (UI or REST) sets ``max_tries = try_number +
retries``, so the first try after a clear is ``max_tries - retries + 1`` (the rule
Airflow's own task runner uses for the first reschedule date). An automatic retry
has a higher try number. The very first try of a run also satisfies the rule; it
has ``try_number == 1`` and nothing to repair.

Resume: every try after the first (an automatic retry or a clear) that finds the
run's newest job ended without its manifest resumes the run with one new job; the
first try fails, so a run resumes at most once per try and ``retries`` bounds what
happens without a person. Imports neither airflow nor ray.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from airflow_provider_rayorch.rayorch.errors import UsageError

__all__ = [
    "RESUME_HINT",
    "RepairMode",
    "ended_before_commit",
    "is_first_try_after_clear",
    "may_resume",
    "should_repair",
    "try_owner",
]

#: What a microbatch task that saw the run's job end before its commit says next.
RESUME_HINT = (
    "the next try of this task (an automatic retry, or a clear) resumes the run with one "
    "new job for the microbatches not committed yet; committed ones are kept"
)


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
            raise UsageError(
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


def may_resume(ti: Any) -> bool:
    """True on every try after the first (an automatic retry or a clear): such a try
    resumes a run whose newest job ended without its manifest. False without an
    integer ``try_number`` (a test double): a retry cannot be told."""
    try_number = _as_int(getattr(ti, "try_number", None))
    return try_number is not None and try_number > 1


def try_owner(ti: Any) -> str:
    """``dag/run/task[map_index] try N``: who repairs or resumes, in the run store."""
    return (
        f"{ti.dag_id}/{ti.run_id}/{ti.task_id}[{getattr(ti, 'map_index', -1)}] try {ti.try_number}"
    )


def ended_before_commit(
    job_id: str | None, status: object, index: int, run_id: str, message: str = ""
) -> str:
    """The error of a microbatch task whose run's job ended without its manifest."""
    why = f" ({message})" if message else ""
    return (
        f"Ray job {job_id} ended {status} before microbatch {index} of run {run_id} "
        f"committed{why}: {RESUME_HINT}"
    )
