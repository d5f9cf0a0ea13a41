"""Which Ray job carries a run on after one ended before the run was done.

A run's job can die (its driver killed, its node lost) after some microbatches
committed. A new job of the same run resumes it: the driver skips every committed
microbatch. This module keeps the chain of those jobs in the run store, one record
per job that was taken over::

    <root>/<run_id>/resumes/<ended job>.json
    {"after": "<ended job>", "job_id": "<its successor>", "owner": "...", "at": "..."}

The successor's id is derived from the ended job's alone (:func:`successor_id`):
``rayorch-...-try1`` is followed by ``rayorch-...-try1-resume1``, then ``-resume2``.
So every observer that sees the same job end names the same successor, writes the
same record and submits the same submission id, and Ray takes that id once: a run
never gets two successors of one job. The record is written before the job is
submitted, so an observer that finds a recorded successor Ray does not know submits
it under that id (it was never taken, or the head that ran it is gone).

:func:`newest_job` follows the chain from the job the run was submitted with to the
one to watch now. Imports neither airflow nor ray.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs import paths
from airflow_provider_rayorch.runs.records import SCHEMA_VERSION, WRITE_FIX, Record, validate_record

if TYPE_CHECKING:
    from .store import RunStore

__all__ = ["ResumeRecord", "newest_job", "read_resume", "record_resume", "successor_id"]

_RESUMED = re.compile(r"^(?P<base>.+)-resume(?P<n>[0-9]+)$")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,150}$")
#: No run is resumed this often; a longer chain means the records are damaged.
MAX_CHAIN = 1000


class ResumeRecord(Record):
    """``resumes/<job>.json``: job ``after`` ended before its run was done; ``job_id``
    resumes the run."""

    KIND: ClassVar[str] = "resume record"
    FIX: ClassVar[str] = (
        "delete it: the next microbatch task that finds the run's job ended resumes the "
        "run again (committed microbatches are kept)"
    )

    schema_version: int = SCHEMA_VERSION
    #: the job that ended before its run was done
    after: str
    #: the job that resumes the run
    job_id: str
    #: the task instance that submitted it, and when
    owner: str | None = None
    at: str | None = None


def successor_id(job_id: str) -> str:
    """The submission id of the job that resumes a run after ``job_id`` ended."""
    found = _RESUMED.match(job_id)
    if found is None:
        return f"{job_id}-resume1"
    return f"{found['base']}-resume{int(found['n']) + 1}"


def _parts(run_id: str, job_id: str) -> tuple[str, ...]:
    name = job_id if _SAFE_NAME.match(job_id) else hashlib.sha256(job_id.encode()).hexdigest()
    return paths.resume(run_id, name)


def read_resume(store: RunStore, run_id: str, job_id: str) -> ResumeRecord | None:
    """The record of the job that took over from ``job_id``, if any."""
    return store.read_record(_parts(run_id, job_id), ResumeRecord)


def newest_job(store: RunStore, run_id: str, job_id: str) -> str:
    """The run's newest job: ``job_id``'s successor's successor ..., or ``job_id``."""
    current = job_id
    for _ in range(MAX_CHAIN):
        record = read_resume(store, run_id, current)
        if record is None:
            return current
        current = record.job_id
    raise StoreError(
        f"run {run_id!r}: more than {MAX_CHAIN} resume records follow job {job_id!r} in "
        f"{store.record_uri(paths.resumes(run_id))}: the records are damaged; delete that "
        "folder, then clear the run's submit task with Downstream to resume the run"
    )


def record_resume(store: RunStore, run_id: str, ended: str, owner: str) -> ResumeRecord:
    """Record that ``ended``'s successor resumes the run (unless it is recorded
    already: then the record as it is); returns the record."""
    found = read_resume(store, run_id, ended)
    if found is not None:
        return found
    parts = _parts(run_id, ended)
    record = validate_record(
        ResumeRecord,
        {
            "after": ended,
            "job_id": successor_id(ended),
            "owner": owner,
            "at": datetime.now(UTC).isoformat(),
        },
        store.record_uri(parts),
        fix=WRITE_FIX,
    )
    # two observers that race write the same successor: the later write changes
    # only ``owner`` and ``at``
    store.write_record(parts, record)
    return record
