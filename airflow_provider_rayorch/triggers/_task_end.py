"""End a deferred sensor's task in the triggerer instead of resuming it on a worker.

A trigger that fires within seconds of its task deferring meets a race in Airflow
3.3's scheduler: the executor's "success" for the worker that exited on ``defer()`` is
read only after the resumed try was queued or started, and that try is failed as a
"state mismatch" with nothing in its log (apache/airflow#72716, #71580). A task that
ends in the triggerer has no resumed try to fail. So the sensors' triggers judge the
outcome themselves and end the task with the XComs its worker would have pushed; a
failure's cause goes to the task's log from the triggerer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.triggers.base import TaskFailedEvent, TaskSuccessEvent

from airflow_provider_rayorch.common.ratio import judge_summary
from airflow_provider_rayorch.common.states import SUMMARY_KEY

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow.triggers.base import BaseTaskEndEvent

__all__ = ["failed_end", "judged_end"]


def judged_end(
    summary: Mapping[str, Any], max_failed_ratio: float, *, what: str, log: Any
) -> BaseTaskEndEvent:
    """Success with the judged summary as the return value, or failure (the cause
    logged) with the summary under both keys, as :func:`sensors.rayorch.judge` does."""
    verdict = judge_summary(summary, max_failed_ratio)
    if verdict.ok:
        return TaskSuccessEvent(xcoms={"return_value": verdict.summary})
    log.error("%s: %s", what, verdict.message)
    return TaskFailedEvent(xcoms={SUMMARY_KEY: verdict.summary, "return_value": verdict.summary})


def failed_end(message: str, *, log: Any) -> BaseTaskEndEvent:
    """Failure; ``message`` (what ended, where, and what to do) goes to the task's log."""
    log.error("%s", message)
    return TaskFailedEvent()
