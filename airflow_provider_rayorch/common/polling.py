"""One rule for retrying Jobs-API reads: the operator, both sensors and both triggers
use it, so a dashboard restart is survived the same way everywhere.

A *transient* error (a :class:`RayOrchTransientError`: no answer in time, a
dropped connection, a refusal after an answer, HTTP 502/503/504) is retried with
exponential backoff, at most ``RETRY_BUDGET.retries`` times in a row; any other
error (HTTP 401/403/404, a certificate, a wrong address) fails at once. When the
budget runs out the last error is raised again, saying how many tries were made
over how long.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from airflow_provider_rayorch.exceptions import RayOrchClusterError, RayOrchTransientError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = [
    "COMMIT_LOOK_S",
    "END_POLL_S",
    "RETRY_BUDGET",
    "RetryBudget",
    "acall_with_retries",
    "call_with_retries",
    "is_transient",
]

#: Between two reads of a job, a waiter looks at the run store's awaited record (a
#: microbatch's manifest, the run manifest) this often: one small read, no Jobs API call.
COMMIT_LOOK_S = 1.0
#: Once the driver said its run ended (its run manifest, or its end event in the log),
#: the job's status is read this often, for at most one poll interval.
END_POLL_S = 0.25

T = TypeVar("T")
_RETRYING = "%s failed (retry %d/%d in %.1f s): %s"


@dataclass(frozen=True)
class RetryBudget:
    """At most ``retries`` consecutive retries; the k-th waits ``base * 2**(k-1)``
    seconds (``base`` is the caller's poll interval), capped at ``max_delay_s``."""

    retries: int = 5
    max_delay_s: float = 60.0

    def delay(self, attempt: int, base: float) -> float:
        return float(min(max(base, 0.0) * 2 ** max(attempt - 1, 0), self.max_delay_s))

    def describe(self, base: float) -> str:
        waits = ", ".join(f"{self.delay(k, base):g}" for k in range(1, self.retries + 1))
        return f"{self.retries} retries waiting {waits} s"


#: The provider's one retry budget (docs/airflow/operators.md, "Transient errors").
RETRY_BUDGET = RetryBudget()


def is_transient(exc: BaseException) -> bool:
    """A Jobs-API error that trying again later may cure."""
    return isinstance(exc, RayOrchTransientError)


def _exhausted(
    what: str, exc: RayOrchClusterError, tries: int, elapsed: float
) -> RayOrchClusterError:
    return RayOrchClusterError(
        f"{what}: gave up after {tries} tries over {elapsed:.0f} s of transient errors "
        f"(retry budget: {RETRY_BUDGET.retries} retries with backoff); last error: {exc}",
    )


def call_with_retries(
    fn: Callable[[], T],
    *,
    what: str,
    interval: float,
    log: Any = None,
    budget: RetryBudget = RETRY_BUDGET,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``fn()``, retried on transient errors within ``budget``."""
    started, attempt = time.monotonic(), 0
    while True:
        try:
            return fn()
        except RayOrchClusterError as exc:
            attempt += 1
            sleep(_wait_or_raise(exc, attempt, what, interval, log, budget, started))


async def acall_with_retries(
    fn: Callable[[], Awaitable[T]],
    *,
    what: str,
    interval: float,
    log: Any = None,
    budget: RetryBudget = RETRY_BUDGET,
) -> T:
    """``await fn()``, retried on transient errors within ``budget`` (for triggers)."""
    started, attempt = time.monotonic(), 0
    while True:
        try:
            return await fn()
        except RayOrchClusterError as exc:
            attempt += 1
            await asyncio.sleep(_wait_or_raise(exc, attempt, what, interval, log, budget, started))


def _wait_or_raise(
    exc: RayOrchClusterError,
    attempt: int,
    what: str,
    interval: float,
    log: Any,
    budget: RetryBudget,
    started: float,
) -> float:
    """The wait before retry ``attempt`` after ``exc``; raises ``exc`` when it is not
    transient, or the budget's "gave up" error when the retries are spent."""
    if not is_transient(exc):
        raise exc
    if attempt > budget.retries:
        raise _exhausted(what, exc, attempt, time.monotonic() - started) from exc
    wait = budget.delay(attempt, interval)
    if log is not None:
        log.warning(_RETRYING, what, attempt, budget.retries, wait, exc)
    return wait
