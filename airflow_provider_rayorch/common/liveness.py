"""Record that a run's Ray job is RUNNING, at most every :data:`BEAT_EVERY`, that it
ended without a run manifest, and that its killed task stopped it.

The runs page and the report call a run ``unknown`` when nothing was heard of it for
``reports.state.STALE_AFTER``; a microbatch running longer than that without a commit
would read ``unknown`` though its job runs. The operator, both sensors and the
triggers call :func:`record_running` whenever they see the job RUNNING. The throttle
is the record's own time, so it holds across reschedules and new trigger instances.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.common.states import JobStatus

if TYPE_CHECKING:
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["BEAT_EVERY", "record_ended_without_manifest", "record_running", "record_stopped"]

#: A RUNNING record younger than this is not written again.
BEAT_EVERY = timedelta(minutes=5)


def _fresh(record: dict[str, Any] | None, now: datetime) -> bool:
    if not record or record.get("job_status") != JobStatus.RUNNING.value:
        return False
    try:
        at = datetime.fromisoformat(str(record.get("at")))
    except ValueError:
        return False
    at = at if at.tzinfo else at.replace(tzinfo=UTC)
    return now - at < BEAT_EVERY


def _read(store: RunStore, run_id: str) -> dict[str, Any] | None:
    """The record, or None when it is damaged (then a new one replaces it)."""
    from airflow_provider_rayorch.runs.store import StoreError

    try:
        return store.read_job_state(run_id)
    except StoreError:
        return None


def record_running(
    store: RunStore, run_id: str, job_id: str, *, log: Any = None, force: bool = False
) -> bool:
    """Write ``RUNNING`` for ``run_id`` unless a RUNNING record younger than
    :data:`BEAT_EVERY` exists (``force``: write anyway, as after a submit). Returns
    whether it wrote. Never raises: the record is for the UI only."""
    try:
        if not force and _fresh(_read(store, run_id), datetime.now(UTC)):
            return False
        store.write_job_state(run_id, JobStatus.RUNNING.value, f"Ray job {job_id} is running")
        return True
    except Exception as exc:
        if log is not None:
            log.warning("could not record that run %s is running: %s", run_id, exc)
        return False


def record_ended_without_manifest(
    store: RunStore,
    run_id: str,
    job_id: str,
    job_status: str,
    message: str,
    *,
    log: Any = None,
    clear: str = "the task",
) -> str:
    """Record that the run's Ray job ended without a run manifest, and return the error
    the task fails with (``clear``: what to clear once the cause is fixed). A job that
    SUCCEEDED (or whose status is unknown) without its manifest is recorded FAILED.
    Never raises: the record is for the UI only."""
    try:
        ended = JobStatus.parse(job_status)
    except ValueError:
        ended = JobStatus.FAILED
    if ended is JobStatus.SUCCEEDED:
        ended = JobStatus.FAILED
    try:
        store.write_job_state(
            run_id, ended.value, f"Ray job {job_id} ended {job_status}: {message}"
        )
    except Exception as exc:
        if log is not None:
            log.warning("could not record the job state of run %s: %s", run_id, exc)
    return (
        f"Ray job {job_id} ended {job_status} without a run manifest for run {run_id}: "
        f"{message}. See the job's driver log (the task's Ray job link), fix the cause, "
        f"then clear {clear}"
    )


def record_stopped(store: RunStore, run_id: str, job_id: str, *, log: Any = None) -> None:
    """Record that a killed task stopped the run's Ray job: the UI must not call the run
    running until its RUNNING record goes stale. Never raises: the record is for the UI."""
    try:
        store.write_job_state(
            run_id,
            JobStatus.STOPPED.value,
            f"Ray job {job_id} was stopped: its Airflow task was killed (marked failed or "
            "cleared, or it timed out); clear the task to run again",
        )
    except Exception as exc:
        if log is not None:
            log.warning("could not record that run %s was stopped: %s", run_id, exc)
