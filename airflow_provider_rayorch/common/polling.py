"""The Jobs API's one retry rule and budget, and the waiters' poll cadences.

What is retryable is decided by type where an error is raised
(:mod:`..hooks.jobs_api` maps "no answer", a refusal after an answer, HTTP
502/503/504 and Ray's "please try again later" to a :class:`RayOrchTransientError`);
:func:`is_transient` is the one test of it. :class:`RetryPolicy` is the one budget:
the request path (sync and async) asks an :class:`Attempts` for the wait before each
retry, and gets the error to raise when the error is permanent or the budget is
spent. :class:`EndPoll` is the one cadence of a waiter's job reads: its poll interval,
and :data:`END_POLL_S` for one interval once the driver said its run ended.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_rayorch.exceptions import RayOrchClusterError, RayOrchTransientError

__all__ = [
    "COMMIT_LOOK_S",
    "END_POLL_S",
    "RETRY_POLICY",
    "Attempts",
    "EndPoll",
    "RetryPolicy",
    "is_transient",
]

#: Between two reads of a job, a waiter looks at the run store's awaited record (a
#: microbatch's manifest, the run manifest) this often: one small read, no Jobs API call.
COMMIT_LOOK_S = 1.0
#: Once the driver said its run ended (its run manifest, or its end event in the log),
#: the job's status is read this often, for at most one poll interval.
END_POLL_S = 0.25


@dataclass
class EndPoll:
    """When a waiter reads its job next: every ``interval`` seconds, and every
    ``fast_s`` for one interval once the driver said its run ended (its end event, or
    its run manifest), since its process exits next. Marking the end again does not
    extend the fast window: a repair's run manifest predates its job."""

    interval: float
    fast_s: float = END_POLL_S
    until: float | None = None

    def driver_ended(self, now: float) -> None:
        """The driver said its run ended (at monotonic time ``now``)."""
        if self.until is None:
            self.until = now + self.interval

    def fast(self, now: float) -> bool:
        """Whether the job is read at the fast cadence at ``now``."""
        return self.until is not None and now < self.until

    def wait(self, now: float) -> float:
        """Seconds from ``now`` to the next job read."""
        return min(self.fast_s, self.interval) if self.fast(now) else self.interval


_RETRYING = "%s failed (retry %d/%d in %.1f s): %s"


def is_transient(exc: BaseException) -> bool:
    """A Jobs-API error that trying again later may cure."""
    return isinstance(exc, RayOrchTransientError)


@dataclass(frozen=True)
class RetryPolicy:
    """At most ``retries`` consecutive retries; the k-th waits ``base_s * 2**(k-1)``
    seconds (a waiter passes its poll interval as ``base_s``), capped at ``max_delay_s``."""

    retries: int = 5
    base_s: float = 1.0
    max_delay_s: float = 60.0

    def delay(self, attempt: int) -> float:
        return float(min(max(self.base_s, 0.0) * 2 ** max(attempt - 1, 0), self.max_delay_s))

    def describe(self) -> str:
        waits = ", ".join(f"{self.delay(k):g}" for k in range(1, self.retries + 1))
        return f"{self.retries} retries waiting {waits} s"

    def attempts(self, what: str, log: Any = None) -> Attempts:
        """The bookkeeping of one call's tries."""
        return Attempts(self, what, log)


#: The provider's default budget (docs/airflow/operators.md, "Transient errors").
RETRY_POLICY = RetryPolicy()


@dataclass
class Attempts:
    """One call's tries under a :class:`RetryPolicy`: :meth:`failed` says how long to
    wait before the next try, or raises."""

    policy: RetryPolicy
    what: str
    log: Any = None
    tries: int = 0
    started: float = field(default_factory=time.monotonic)

    def failed(self, exc: RayOrchClusterError) -> float:
        """The wait before the next try after ``exc``; raises ``exc`` when it is not
        transient, or the budget's "gave up" error when the retries are spent."""
        self.tries += 1
        if not is_transient(exc):
            raise exc
        if self.tries > self.policy.retries:
            elapsed = time.monotonic() - self.started
            raise RayOrchClusterError(
                f"{self.what}: gave up after {self.tries} tries over {elapsed:.0f} s of "
                f"transient errors (retry budget: {self.policy.describe()}); last error: {exc}",
            ) from exc
        wait = self.policy.delay(self.tries)
        if self.log is not None:
            self.log.warning(_RETRYING, self.what, self.tries, self.policy.retries, wait, exc)
        return wait
