"""End a deferred sensor's task in the triggerer instead of resuming it on a worker.

A trigger that fires within seconds of its task deferring meets a race in Airflow
3.3's scheduler: the executor's "success" for the worker that exited on ``defer()`` is
read only after the resumed try was queued or started, and that try is failed as a
"state mismatch" with nothing in its log (apache/airflow#72716, #71580). A task that
ends in the triggerer has no resumed try to fail. So the sensors' triggers judge the
outcome themselves, push the XComs the worker would have pushed, and end the task; a
failure's cause goes to the task's log from the triggerer.

The XComs go through the Task SDK's XCom backend, as a worker's do. A task-end
event's own ``xcoms`` are stored JSON-encoded twice in Airflow 3.3, so a downstream
task would pull a string instead of the summary.
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


async def _push(task_instance: Any, xcoms: Mapping[str, Any]) -> None:
    """Push ``xcoms`` for the trigger's task instance. Without one (``dag.test()`` runs
    the trigger inline, then resumes the task, which pushes them) there is none to do."""
    if task_instance is None:
        return
    from airflow.sdk.execution_time.xcom import XCom

    for key, value in xcoms.items():
        await XCom.aset(
            key,
            value,
            dag_id=task_instance.dag_id,
            task_id=task_instance.task_id,
            run_id=task_instance.run_id,
            map_index=task_instance.map_index,
        )


async def judged_end(
    task_instance: Any,
    summary: Mapping[str, Any],
    max_failed_ratio: float,
    *,
    what: str,
    log: Any,
) -> BaseTaskEndEvent:
    """Success with the judged summary as the return value, or failure (the cause
    logged) with the summary under both keys, as :func:`sensors.rayorch.judge` does."""
    verdict = judge_summary(summary, max_failed_ratio)
    if verdict.ok:
        await _push(task_instance, {"return_value": verdict.summary})
        return TaskSuccessEvent()
    log.error("%s: %s", what, verdict.message)
    await _push(task_instance, {SUMMARY_KEY: verdict.summary, "return_value": verdict.summary})
    return TaskFailedEvent()


def failed_end(message: str, *, log: Any) -> BaseTaskEndEvent:
    """Failure; ``message`` (what ended, where, and what to do) goes to the task's log."""
    log.error("%s", message)
    return TaskFailedEvent()
