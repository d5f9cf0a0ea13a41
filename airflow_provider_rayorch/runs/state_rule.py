"""The rule that turns a run's stored facts into the state every surface shows (pure).

:func:`.run_state.read_run_state` reads the facts and calls :func:`decide_state`.

With a run-state record (``run_state.json``, :mod:`.run_state`) that no later submit
superseded, the record decides:

- ``running``: ``running``; ``failed`` (or ``stopped``) when the caller read the Ray
  job ended (the driver was killed before recording its end); ``unknown`` once the
  record is older than :data:`STALE_AFTER` (the driver beats every few minutes);
- ``succeeded``: the run manifest's verdict (``success`` | ``failed``), or, after a
  repair since it was written, that of the repaired counts;
- ``failed``: ``failed`` with its reason, ``not_started`` when no driver ran;
- ``stopped``: ``stopped``.

Without one (a run store of 0.1.0, or a job submitted after the record), the older
rule of the job-state record (``job_state.json``, written by the submit) decides,
first match wins; the newest fact wins, and a job-state record older than any other
fact about the run (its plan, a manifest, the run manifest, a repair record, the
run-state record) shows neither its status nor its message:

1. a run manifest exists and no microbatch was repaired after it was written: its
   ``state`` (``success`` | ``failed``); a repair since then lets rule 3 decide by the
   repaired counts until the run task rewrites the run manifest;
2. the job-state record names an ended job (``NOT_STARTED``, ``FAILED``, ``STOPPED``)
   and is not superseded: ``not_started`` | ``failed`` | ``stopped``, with its message;
3. every microbatch is committed: ``success`` | ``failed`` by the failed ratio (a
   ``SUCCEEDED`` job that left microbatches uncommitted: ``unknown``, saying so);
4. otherwise ``running`` (``pending`` while the record says ``PENDING``) as long as
   the newest sign of life (the record, the plan, a manifest, a repair) is younger
   than :data:`STALE_AFTER`; after that ``unknown``, saying since when nothing was
   recorded. A job that ended without anyone recording it cannot run forever.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from airflow_provider_rayorch.runs import paths
from airflow_provider_rayorch.runs.history import stale_run_manifest
from airflow_provider_rayorch.runs.job_status import JobStatus

if TYPE_CHECKING:
    from airflow_provider_rayorch.runs.records import (
        JobStateRecord,
        MicrobatchManifest,
        RunManifest,
    )
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = [
    "STALE_AFTER",
    "TERMINAL_STATES",
    "RunFacts",
    "RunState",
    "current_manifest_state",
    "decide_state",
    "last_write",
    "reads_job_record",
    "with_note",
    "with_repairs",
]

#: How long a run with no news (no commit, no report, no job status) still counts as running.
STALE_AFTER = timedelta(hours=1)
#: A record this much older than the run's last write is from an earlier attempt.
_CLOCK_SLACK = timedelta(seconds=5)
#: States after which nothing more happens to the run.
TERMINAL_STATES = frozenset({"success", "failed", "not_started", "stopped"})
_ENDED = {
    JobStatus.NOT_STARTED: "not_started",
    JobStatus.FAILED: "failed",
    JobStatus.STOPPED: "stopped",
}


@dataclass(frozen=True)
class RunState:
    """What the pages show: ``state``, the Ray job's status and why, and as of when."""

    state: str
    job_status: str | None = None
    message: str | None = None
    #: The newest sign of life of the run (UTC), if any was found.
    as_of: datetime | None = None

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL_STATES


@dataclass(frozen=True)
class RunFacts:
    """What the rule needs, read from the store."""

    has_plan: bool
    #: ``state`` of the run manifest, None without one.
    manifest_state: str | None = None
    #: The state the counts give once every microbatch is committed, else None.
    all_committed_state: str | None = None
    #: The job-state record (``job_state.json``), None without one.
    job_state: JobStateRecord | None = None
    #: Newest modification time of the run's plan, manifests and repair records.
    last_write: datetime | None = None
    #: The run-state record (``run_state.RunStateRecord``), None without one.
    run_state: Any = None
    #: The Ray job's status as the caller just read it, None if it did not.
    job_status: Any = None


def _parse_at(value: Any) -> datetime | None:
    try:
        at = datetime.fromisoformat(str(value))
    except (TypeError, ValueError):
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _ago(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    if minutes < 120:
        return f"{minutes} min"
    hours = minutes // 60
    return f"{hours} h" if hours < 48 else f"{hours // 24} days"


def decide_state(
    facts: RunFacts, *, now: datetime | None = None, stale_after: timedelta = STALE_AFTER
) -> RunState:
    """Apply the module's rule to ``facts`` as of ``now`` (default: the current time)."""
    now = now or datetime.now(UTC)
    if not reads_job_record(facts):
        return _from_run_state(facts, now, stale_after)
    record = facts.job_state
    status = None if record is None else record.job_status
    at = None if record is None else _parse_at(record.at)
    signs = [t for t in (at, facts.last_write) if t is not None]
    as_of = max(signs) if signs else None
    superseded = (
        at is not None and facts.last_write is not None and facts.last_write > at + _CLOCK_SLACK
    ) or (facts.manifest_state is not None and status is not None and status.is_active)
    if superseded:  # the newest fact is not the record: it says nothing any more
        status = None
    message = (record.message or None) if record is not None and status is not None else None
    job = None if status is None else status.value
    if facts.manifest_state is not None:
        return RunState(facts.manifest_state, job, message, as_of)
    if status in _ENDED:
        return RunState(_ENDED[status], job, message, as_of)
    if facts.all_committed_state is not None:
        return RunState(facts.all_committed_state, job, message, as_of)
    if status is JobStatus.SUCCEEDED:
        note = (
            "the Ray job ended (SUCCEEDED) without writing the run manifest: its driver "
            "wrote to another run store, or was not the RayOrch driver"
        )
        return RunState("unknown", job, message or note, as_of)
    if not facts.has_plan and status is None:
        return RunState("unknown", None, "no plan record for this run in the run store", as_of)
    if as_of is not None and now - as_of > stale_after:
        note = (
            f"no progress recorded since {as_of:%Y-%m-%d %H:%M} UTC ({_ago(now - as_of)} ago) "
            "and no final job status: the job may have ended without the provider seeing it. "
            "Check the task's log or the Ray dashboard."
        )
        return RunState("unknown", job, note, as_of)
    live_message = message if status is not None and status.is_active else None
    if status is JobStatus.PENDING:
        return RunState("pending", job, live_message, as_of)
    return RunState("running", job, live_message, as_of)


def reads_job_record(facts: RunFacts) -> bool:
    """The job-state record's rule decides (and needs ``last_write``): no run-state
    record, or a job submitted after it."""
    return facts.run_state is None or _submitted_since(facts)


def _submitted_since(facts: RunFacts) -> bool:
    """The job-state record says a job was submitted after the run-state record."""
    record = facts.job_state
    if record is None:
        return False
    at, written = _parse_at(record.at), facts.run_state.at
    return (
        record.job_status.is_active
        and at is not None
        and written is not None
        and at > written + _CLOCK_SLACK
    )


def _status(value: Any) -> JobStatus | None:
    try:
        return None if value is None else JobStatus.parse(value)
    except ValueError:
        return None


def _from_run_state(facts: RunFacts, now: datetime, stale_after: timedelta) -> RunState:
    record = facts.run_state
    as_of, reason = record.at, record.reason or None
    if record.state == "stopped":
        return RunState("stopped", JobStatus.STOPPED.value, reason, as_of)
    if record.state == "failed":
        if not record.driver_started:
            return RunState("not_started", JobStatus.NOT_STARTED.value, reason, as_of)
        return RunState("failed", JobStatus.FAILED.value, reason, as_of)
    done = facts.manifest_state or facts.all_committed_state
    if record.state == "succeeded":
        if done is not None:
            return RunState(done, JobStatus.SUCCEEDED.value, reason, as_of)
        note = "the driver ended without committing every microbatch"
        return RunState("unknown", JobStatus.SUCCEEDED.value, reason or note, as_of)
    job = _status(facts.job_status)
    if job is not None and job.is_terminal:
        if job is JobStatus.SUCCEEDED and done is not None:
            return RunState(done, job.value, reason, as_of)
        why = (
            f"the Ray job ended {job.value} while its driver's record still said running: "
            "the driver was killed or its node was lost before recording its end"
        )
        ended = "stopped" if job is JobStatus.STOPPED else "failed"
        return RunState(ended, job.value, why, as_of)
    if as_of is not None and now - as_of > stale_after:
        note = (
            f"the driver recorded nothing since {as_of:%Y-%m-%d %H:%M} UTC "
            f"({_ago(now - as_of)} ago) though it writes every few minutes: it may have "
            "ended without recording it. Check the task's log or the Ray dashboard."
        )
        return RunState("unknown", None, note, as_of)
    return RunState("running", JobStatus.RUNNING.value, reason, as_of)


#: Files that are no fact about the run's progress: the record carries its own time, and
#: a report is rewritten whenever anyone renders one (a refused repair, for example).
_NOT_FACTS = (paths.JOB_STATE_FILE, paths.REPORT_FILE, paths.REPORT_DATA_FILE)


def last_write(store: RunStore, run_id: str) -> datetime | None:
    """Newest modification time of the run's plan, manifests, run manifest and repair
    records (UTC): the newest fact the run store holds besides the job-state record."""
    times = []
    for parts in ((run_id,), paths.manifests(run_id), paths.repairs(run_id)):
        path = posixpath.join(store.root, *parts)
        for info in store.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)):
            if info.type == pafs.FileType.File and info.mtime is not None:
                if info.base_name.startswith(_NOT_FACTS):
                    continue
                mtime = info.mtime
                times.append(mtime if mtime.tzinfo else mtime.replace(tzinfo=UTC))
    return max(times) if times else None


def with_note(state: RunState, note: str | None) -> RunState:
    """``state`` carrying ``note`` as its message when it has none of its own."""
    return replace(state, message=note) if note and not state.message else state


def with_repairs(state: RunState, note: str | None) -> RunState:
    """``state`` whose message also names the run's repairs (``history.repairs_note``)."""
    if not note:
        return state
    return replace(state, message=f"{state.message} \u00b7 {note}" if state.message else note)


def current_manifest_state(
    run_manifest: RunManifest | None, manifests: list[MicrobatchManifest]
) -> str | None:
    """The run manifest's ``state``, or None without one or when a microbatch was
    repaired after it was written (the counts of today's manifests then decide)."""
    if run_manifest is None or stale_run_manifest(run_manifest, manifests):
        return None
    return run_manifest.state or "success"
