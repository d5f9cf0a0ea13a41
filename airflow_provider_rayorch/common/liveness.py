"""Record that a run's Ray job is RUNNING, at most every :data:`BEAT_EVERY`.

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
    from airflow_provider_rayorch.rayorch.store import RunStore

__all__ = ["BEAT_EVERY", "record_running"]

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
    from airflow_provider_rayorch.rayorch.store import StoreError

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
