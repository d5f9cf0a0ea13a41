"""What the Airflow tasks record about a run's Ray job: only what its driver could not.

The driver owns the run-state record (:mod:`airflow_provider_rayorch.runs.run_state`):
it says running at start, at each commit and every few minutes, and records its own
end. A task records that the job was submitted (:func:`record_submitted`, the
job-state record) and, through :mod:`~airflow_provider_rayorch.runs.run_state`, the
ends no driver wrote: a job that ended without its driver recording an end
(:func:`record_ended_without_manifest`) and a job its killed task stopped
(:func:`record_stopped`). None of them replaces an end the driver recorded, and none
raises: the records are for the UI, the task's own error is what counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.common.states import JobStatus

if TYPE_CHECKING:
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["record_ended_without_manifest", "record_stopped", "record_submitted"]


def record_submitted(store: RunStore, run_id: str, job_id: str, *, log: Any = None) -> None:
    """Record (job-state record) that Ray job ``job_id`` was submitted for ``run_id``:
    until its driver writes, the run reads as a job on its way."""
    try:
        store.write_job_state(run_id, JobStatus.RUNNING.value, f"Ray job {job_id} submitted")
    except Exception as exc:
        if log is not None:
            log.warning("could not record that run %s was submitted: %s", run_id, exc)


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
    """Record that the run's Ray job ended without a run manifest, unless its driver
    recorded its end, and return the error the task fails with (``clear``: what to
    clear once the cause is fixed). A job that SUCCEEDED (or whose status is unknown)
    without its manifest is recorded FAILED."""
    from airflow_provider_rayorch.runs.run_state import record_job_ended

    try:
        ended = JobStatus.parse(job_status)
    except ValueError:
        ended = JobStatus.FAILED
    if ended is JobStatus.SUCCEEDED:
        ended = JobStatus.FAILED
    try:
        record_job_ended(
            store, run_id, ended, f"Ray job {job_id} ended {job_status}: {message}", job_id=job_id
        )
    except Exception as exc:
        if log is not None:
            log.warning("could not record the end of run %s: %s", run_id, exc)
    return (
        f"Ray job {job_id} ended {job_status} without a run manifest for run {run_id}: "
        f"{message}. See the job's driver log (the task's Ray job link), fix the cause, "
        f"then clear {clear}"
    )


def record_stopped(store: RunStore, run_id: str, job_id: str, *, log: Any = None) -> None:
    """Record that a killed task stopped the run's Ray job, unless its driver recorded
    its end first (a stopped driver records ``stopped`` itself when it can)."""
    from airflow_provider_rayorch.runs import run_state

    try:
        run_state.record_stopped(
            store,
            run_id,
            f"Ray job {job_id} was stopped: its Airflow task was killed (marked failed or "
            "cleared, or it timed out); clear the task to run again",
            job_id=job_id,
        )
    except Exception as exc:
        if log is not None:
            log.warning("could not record that run %s was stopped: %s", run_id, exc)
