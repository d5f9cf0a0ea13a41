"""A run's state as every page shows it: one rule, read from the store.

Every surface (the kept ``report.html``, the report tabs, the runs page) calls
:func:`read_run_state`, so they cannot disagree. The newest fact wins: the job-state
record (``job_state.json``, written at submit and by pollers) is **superseded** by
any later fact about the run (its plan, a microbatch manifest, the run manifest, a
repair record) and by a current run manifest whatever its time (the driver writes
the run manifest last, so a RUNNING or PENDING record next to it only saw the job's
last seconds). A superseded record shows neither its status nor its message.

The rule, first match wins:

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

from airflow_provider_rayorch.common.states import JobStatus
from airflow_provider_rayorch.rayorch.summary import summary_state
from airflow_provider_rayorch.runs.store import StoreError

from .history import attempt_rows, repairs_note, stale_run_manifest

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_rayorch.runs.store import RunStore

__all__ = [
    "STALE_AFTER",
    "TERMINAL_STATES",
    "RunFacts",
    "RunState",
    "current_manifest_state",
    "decide_state",
    "last_write",
    "read_job_record",
    "read_run_state",
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
    #: ``read_job_state``'s record, None without one.
    job_state: Mapping[str, Any] | None = None
    #: Newest modification time of the run's plan, manifests and repair records.
    last_write: datetime | None = None


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
    record = facts.job_state or {}
    status: JobStatus | None = None
    if record.get("job_status"):
        try:
            status = JobStatus.parse(record["job_status"])
        except ValueError:
            status = None
    at = _parse_at(record.get("at"))
    signs = [t for t in (at, facts.last_write) if t is not None]
    as_of = max(signs) if signs else None
    superseded = (
        at is not None and facts.last_write is not None and facts.last_write > at + _CLOCK_SLACK
    ) or (facts.manifest_state is not None and status is not None and status.is_active)
    if superseded:  # the newest fact is not the record: it says nothing any more
        status = None
    message = (record.get("message") or None) if status is not None else None
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


#: Files that are no fact about the run's progress: the record carries its own time, and
#: a report is rewritten whenever anyone renders one (a refused repair, for example).
_NOT_FACTS = ("job_state.json", "report.")


def last_write(store: RunStore, run_id: str) -> datetime | None:
    """Newest modification time of the run's plan, manifests, run manifest and repair
    records (UTC): the newest fact the run store holds besides the job-state record."""
    base = posixpath.join(store.root, run_id)
    times = []
    for path in (base, posixpath.join(base, "manifests"), posixpath.join(base, "repairs")):
        for info in store.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)):
            if info.type == pafs.FileType.File and info.mtime is not None:
                if info.base_name.startswith(_NOT_FACTS):
                    continue
                mtime = info.mtime
                times.append(mtime if mtime.tzinfo else mtime.replace(tzinfo=UTC))
    return max(times) if times else None


def read_job_record(store: RunStore, run_id: str) -> tuple[dict[str, Any] | None, str | None]:
    """The job-state record, or None and why when it is damaged (it must not hide the run)."""
    try:
        return store.read_job_state(run_id), None
    except StoreError as exc:
        return None, str(exc)


def with_note(state: RunState, note: str | None) -> RunState:
    """``state`` carrying ``note`` as its message when it has none of its own."""
    return replace(state, message=note) if note and not state.message else state


def with_repairs(state: RunState, note: str | None) -> RunState:
    """``state`` whose message also names the run's repairs (``history.repairs_note``)."""
    if not note:
        return state
    return replace(state, message=f"{state.message} \u00b7 {note}" if state.message else note)


def current_manifest_state(
    run_manifest: Mapping[str, Any] | None, manifests: list[dict[str, Any]]
) -> str | None:
    """The run manifest's ``state``, or None without one or when a microbatch was
    repaired after it was written (the counts of today's manifests then decide)."""
    if run_manifest is None or stale_run_manifest(run_manifest, manifests):
        return None
    return str(run_manifest.get("state", "success"))


def read_run_state(store: RunStore, run_id: str, *, now: datetime | None = None) -> RunState:
    """The state of one run, from its run manifest, job-state record, plan and manifests;
    a repaired run's message names its repairs."""
    from airflow_provider_rayorch.runs.attempts import read_repairs

    manifest = store.read_run_manifest(run_id)
    plan = store.read_plan(run_id)
    repairs = read_repairs(store, run_id)
    # an unrepaired finished run needs no manifest read (the runs page lists many)
    manifests = store.manifests(run_id) if manifest is None or repairs else []
    manifest_state = current_manifest_state(manifest, manifests)
    all_committed = None
    if manifest_state is None and plan is not None and len(manifests) >= len(plan.microbatches()):
        counts: dict[str, int] = {}
        for m in manifests:
            for key, value in (m.get("sources") or {}).items():
                counts[key] = counts.get(key, 0) + int(value)
        all_committed = summary_state(counts, plan.max_failed_ratio)
    record, unreadable = read_job_record(store, run_id)
    facts = RunFacts(
        has_plan=plan is not None,
        manifest_state=manifest_state,
        all_committed_state=all_committed,
        job_state=record,
        last_write=last_write(store, run_id),
    )
    by_index = {int(m["microbatch"]["index"]): m for m in manifests}
    note = repairs_note(attempt_rows(by_index, repairs)) if repairs else None
    return with_repairs(with_note(decide_state(facts, now=now), unreadable), note)
