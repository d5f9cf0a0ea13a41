"""The run-state record (``<run>/run_state.json``) and the one function that reads a
run's state: :func:`read_run_state`.

The record says whether the run is ``running``, ``succeeded``, ``failed`` or
``stopped``, why, and when that was written. Its owner is the driver
(:mod:`.driver`): it writes ``running`` at start, at each commit and every
:data:`BEAT_EVERY` while no commit comes, and its end (``succeeded``, or ``failed``
or ``stopped`` with the cause) whatever ends it. Only where no driver could write
does the Airflow task that owns the Ray job write it (``writer="airflow"``): a job
that never started its driver (:func:`record_not_started`), a job its task stopped
(:func:`record_stopped`), and a job that ended while the driver's record still said
``running`` (:func:`record_job_ended`: the driver was killed or its node lost). Those
never replace an end the driver recorded.

Every surface (the kept report, the plugin's tabs and runs page, XCom, lineage)
reads a run's state through :func:`read_run_state`; the rule itself is
:func:`.state_rule.decide_state`.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs import paths
from airflow_provider_rayorch.runs.paths import RUN_STATE_FILE
from airflow_provider_rayorch.runs.records import (
    SCHEMA_VERSION,
    Record,
    RunManifest,
    microbatch_count,
    sanitize_message,
    validate_record,
)
from airflow_provider_rayorch.runs.state_rule import (
    STALE_AFTER,
    TERMINAL_STATES,
    RunFacts,
    RunState,
    current_manifest_state,
    decide_state,
    last_write,
    reads_job_record,
    with_note,
    with_repairs,
)

if TYPE_CHECKING:
    from airflow_provider_rayorch.runs.job_status import JobStatus
    from airflow_provider_rayorch.runs.records import (
        Attempt,
        JobStateRecord,
        MicrobatchManifest,
        RepairRecord,
    )
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = [
    "BEAT_EVERY",
    "RUN_STATE_FILE",
    "STALE_AFTER",
    "TERMINAL_STATES",
    "DriverState",
    "RunState",
    "RunStateRecord",
    "read_run_state",
    "read_run_state_record",
    "record_job_ended",
    "record_not_started",
    "record_stopped",
    "recorded_job_status",
    "run_manifest_head",
    "write_run_state",
]

#: While no microbatch commits, the driver rewrites its ``running`` record this often.
BEAT_EVERY = timedelta(minutes=5)

State = Literal["running", "succeeded", "failed", "stopped"]


class RunStateRecord(Record):
    """``run_state.json``: the run's state as its driver (or, where no driver could,
    the Airflow task owning its job) last wrote it."""

    KIND: ClassVar[str] = "run-state record"
    FIX: ClassVar[str] = "delete it: the next driver rewrites it (the manifests tell the state)"

    schema_version: int = SCHEMA_VERSION
    state: State
    #: why the run is in this state (a failure's cause), for people; never a credential
    reason: str | None = None
    #: when the record was written (ISO 8601, UTC)
    updated_at: str
    #: ``driver``, or ``airflow`` when the task owning the job wrote it (see the module)
    writer: Literal["driver", "airflow"] = "driver"
    #: the driver started (False: the job never ran it)
    driver_started: bool = True
    #: microbatches committed and planned when it was written
    committed: int = Field(default=0, ge=0)
    total: int = Field(default=0, ge=0)
    job_id: str | None = None

    @field_validator("reason")
    @classmethod
    def _no_credentials(cls, value: str | None) -> str | None:
        return None if value is None else sanitize_message(value)

    @property
    def at(self) -> datetime | None:
        try:
            at = datetime.fromisoformat(self.updated_at)
        except ValueError:
            return None
        return at if at.tzinfo else at.replace(tzinfo=UTC)


def _parts(run_id: str) -> tuple[str, ...]:
    return paths.run_state(run_id)


def read_run_state_record(store: RunStore, run_id: str) -> RunStateRecord | None:
    """The run-state record, None if none was written; :class:`StoreError` if damaged."""
    return store.read_record(_parts(run_id), RunStateRecord)


def write_run_state(
    store: RunStore,
    run_id: str,
    state: State,
    reason: str | None = None,
    **fields: Any,
) -> RunStateRecord:
    """Write the run-state record (atomically) and return it."""
    record = RunStateRecord(
        state=state, reason=reason, updated_at=datetime.now(UTC).isoformat(), **fields
    )
    store.write_record(_parts(run_id), record)
    return record


class DriverState:
    """The driver's writer of its run's record: :meth:`started`, :meth:`committed`
    (one small write per commit) and :meth:`ended`; a thread rewrites ``running``
    every :data:`BEAT_EVERY` while the run goes on."""

    def __init__(self, store: RunStore, run_id: str, *, job_id: str | None = None) -> None:
        self.store, self.run_id, self.job_id = store, run_id, job_id
        self.done = self.total = 0
        # re-entrant: the SIGTERM handler runs on the main thread, maybe inside _write
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self.ended_as: str | None = None

    def _write(self, state: State, reason: str | None = None) -> None:
        with self._lock:
            write_run_state(
                self.store,
                self.run_id,
                state,
                reason,
                committed=self.done,
                total=self.total,
                job_id=self.job_id,
            )

    def started(self, committed: int, total: int, reason: str | None = None) -> None:
        self.done, self.total = committed, total
        self._write("running", reason)
        if self._beat is None:
            self._beat = threading.Thread(target=self._loop, name="rayorch-state", daemon=True)
            self._beat.start()

    def committed(self) -> None:
        self.done += 1
        self._write("running")

    def _loop(self) -> None:
        while not self._stop.wait(BEAT_EVERY.total_seconds()):
            try:
                self._write("running")
            except Exception:  # a missed beat only ages the record; the run goes on
                continue

    def ended(self, state: State, reason: str | None = None) -> None:
        """Stop the beat and write the run's end (once)."""
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=5)
        if self.ended_as is None:
            self.ended_as = state
            self._write(state, reason)


def _ended_by_driver(store: RunStore, run_id: str) -> bool:
    """The driver recorded an end: nobody else may write over it."""
    try:
        record = read_run_state_record(store, run_id)
    except StoreError:
        return False
    return record is not None and record.writer == "driver" and record.state != "running"


def _driver_record(store: RunStore, run_id: str) -> RunStateRecord | None:
    try:
        record = read_run_state_record(store, run_id)
    except StoreError:
        return None
    return record if record is not None and record.writer == "driver" else None


def record_not_started(
    store: RunStore, run_id: str, reason: str, *, job_id: str | None = None
) -> None:
    """The run's job never started its driver (a submit that failed, a job that ended
    before its driver ran): ``failed`` with ``driver_started=False``. Written by the
    task that owns the job; a driver's record is never replaced."""
    if _driver_record(store, run_id) is None:
        write_run_state(
            store, run_id, "failed", reason, writer="airflow", driver_started=False, job_id=job_id
        )


def record_stopped(store: RunStore, run_id: str, reason: str, *, job_id: str | None = None) -> None:
    """The task owning the run's job stopped it; unless its driver recorded an end."""
    if not _ended_by_driver(store, run_id):
        write_run_state(store, run_id, "stopped", reason, writer="airflow", job_id=job_id)


def record_job_ended(
    store: RunStore, run_id: str, status: JobStatus, reason: str, *, job_id: str | None = None
) -> None:
    """The run's job ended (``status`` per Ray) without its driver recording an end:
    never started (no driver record), or killed mid-run (its record says running)."""
    from airflow_provider_rayorch.runs.job_status import JobStatus

    record = _driver_record(store, run_id)
    if record is None:
        record_not_started(store, run_id, reason, job_id=job_id)
    elif record.state == "running":
        state: State = "stopped" if status is JobStatus.STOPPED else "failed"
        write_run_state(
            store,
            run_id,
            state,
            f"the driver ended without recording its end (killed, or its node was lost): {reason}",
            writer="airflow",
            committed=record.committed,
            total=record.total,
            job_id=job_id or record.job_id,
        )


_JOB_STATUS = {"succeeded": "SUCCEEDED", "failed": "FAILED", "stopped": "STOPPED"}


def recorded_job_status(store: RunStore, run_id: str) -> str | None:
    """The job status the run-state record stands for (``SUCCEEDED`` once the driver
    recorded its success, ``NOT_STARTED`` for a job that never ran its driver, ...);
    None while it runs, without a record, or when it cannot be read."""
    try:
        record = read_run_state_record(store, run_id)
    except StoreError:
        return None
    if record is None:
        return None
    if record.state == "failed" and not record.driver_started:
        return "NOT_STARTED"
    return _JOB_STATUS.get(record.state)


def read_run_state(
    store: RunStore,
    run_id: str,
    *,
    now: datetime | None = None,
    job_status: JobStatus | str | None = None,
    manifests: list[MicrobatchManifest] | None = None,
) -> RunState:
    """The state of one run, as every surface shows it (see :mod:`.state_rule`).

    :param job_status: the run's Ray job status as the caller just read it, if it did
        (a run whose driver left no end record reads as that job's end).
    :param manifests: the run's microbatch manifests, when the caller read them already.
    """
    from airflow_provider_rayorch.runs.attempts import repair_records
    from airflow_provider_rayorch.runs.history import attempt_rows, repairs_note

    repairs = repair_records(store, run_id)
    repaired = _repaired_aggregate(store, run_id, repairs) if manifests is None else None
    histories: dict[int, list[Attempt]] = {}
    manifest: RunManifest | None
    if repaired is not None:  # current after the repairs: its head and histories tell
        (manifest, histories), manifests = repaired, []
    else:  # its listing tells a repair since it was written only: read it when it can
        listing = bool(repairs) or manifests is not None
        manifest = run_manifest_head(store, run_id, listing=listing)
    plan = store.read_plan(run_id)
    record, unreadable = _read_record(store, run_id)
    # a finished unrepaired run, or one its driver still runs, needs no manifest read
    needs = manifest is None or (bool(repairs) and repaired is None)
    if record is not None and record.state in ("running", "stopped"):
        needs = False
    if record is not None and record.state == "failed" and manifest is None:
        needs = False
    if manifests is None:
        manifests = store.manifest_records(run_id) if needs else []
    manifest_state = current_manifest_state(manifest, manifests)
    all_committed = None
    planned = None if plan is None else microbatch_count(plan.total_sources, plan.batch_size)
    if manifest_state is None and plan is not None and len(manifests) >= (planned or 0):
        all_committed = _counts_state(manifests, plan.max_failed_ratio)
    job, job_unreadable = _read_job(store, run_id)
    facts = RunFacts(
        has_plan=plan is not None,
        manifest_state=manifest_state,
        all_committed_state=all_committed,
        job_state=job,
        run_state=record,
        job_status=job_status,
    )
    if reads_job_record(facts):  # only that rule needs the listing of the run's files
        facts = replace(facts, last_write=last_write(store, run_id))
    histories.update((m.microbatch.index, m.attempts or []) for m in manifests if m.microbatch)
    note = repairs_note(attempt_rows(histories, repairs)) if repairs else None
    state = with_note(decide_state(facts, now=now), unreadable or job_unreadable)
    return with_repairs(state, note)


def _repaired_aggregate(
    store: RunStore, run_id: str, repairs: list[RepairRecord]
) -> tuple[RunManifest, dict[int, list[Attempt]]] | None:
    """A repaired run's manifest head and attempt histories from its aggregate record,
    when that is current (the run task summed the repairs): None without repairs or
    such a record (a damaged one included)."""
    if not repairs:
        return None
    from airflow_provider_rayorch.runs import aggregate_record as aggregates

    try:
        record = aggregates.read_aggregate_record(store, run_id, repairs=repairs)
    except StoreError:
        return None
    if record is None:
        return None
    return aggregates.manifest_head(record, store, run_id), aggregates.histories(record)


def run_manifest_head(store: RunStore, run_id: str, *, listing: bool = False) -> RunManifest | None:
    """The run manifest; without ``listing``, its head only: from its aggregate record
    while that is current (:mod:`.aggregate_record`), else from ``run.json`` with its
    per-microbatch listing (one entry a microbatch) left out unvalidated. The run's
    verdict reads the same."""
    if listing:
        return store.run_manifest_record(run_id)
    from airflow_provider_rayorch.runs import aggregate_record as aggregates

    stamp = aggregates.manifest_stamp(store, run_id)
    if stamp is None:
        return None
    try:
        record = aggregates.read_aggregate_record(store, run_id, stamp)
    except StoreError:  # a damaged aggregate record: run.json still tells
        record = None
    if record is not None:
        return aggregates.manifest_head(record, store, run_id)
    parts = paths.run_manifest(run_id)
    raw = store.read_bytes(parts)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except ValueError:  # the typed read names the file and the fix
        return store.run_manifest_record(run_id)
    if isinstance(data, dict):
        data.pop("microbatches", None)
    return validate_record(RunManifest, data, store.record_uri(parts))


def _counts_state(manifests: list[MicrobatchManifest], max_failed_ratio: float) -> str:
    from airflow_provider_rayorch.rayorch.summary import summary_state

    counts: dict[str, int] = {}
    for m in manifests:
        for key, value in (m.sources.model_dump() if m.sources else {}).items():
            counts[key] = counts.get(key, 0) + int(value)
    return summary_state(counts, max_failed_ratio)


def _read_record(store: RunStore, run_id: str) -> tuple[RunStateRecord | None, str | None]:
    """The run-state record, or None and why when it is damaged (it must not hide the run)."""
    try:
        return read_run_state_record(store, run_id), None
    except StoreError as exc:
        return None, str(exc)


def _read_job(store: RunStore, run_id: str) -> tuple[JobStateRecord | None, str | None]:
    try:
        return store.job_state_record(run_id), None
    except StoreError as exc:
        return None, str(exc)
