"""The run aggregate record (``<run>/run_aggregate.json``): the run manifest without its
per-microbatch listing, and the bounded aggregate of the run's commits
(:class:`~.aggregate.RunAggregate`: its rows of microbatches, totals, attempt
histories of repaired microbatches and the source rows a report lists).

:func:`~.run_manifest.write_run_manifest` writes it right after ``run.json`` and
stamps it with that file's size and modification time. It is current while
``run.json`` still has them (a resumed run clears ``run.json``, a rewrite changes it)
and no microbatch was repaired after it (:func:`read_aggregate_record`; a repair also
deletes it before it commits, :mod:`.repair`). The run's
state (:func:`.run_state.run_manifest_head`) and a report rendered from the store read
it instead of ``run.json``'s listing and every microbatch manifest: a record of the
same size whatever the number of microbatches.
"""

from __future__ import annotations

import posixpath
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow.fs as pafs
from pydantic import Field

from airflow_provider_rayorch.runs import paths
from airflow_provider_rayorch.runs.aggregate import MicrobatchBin, RunAggregate
from airflow_provider_rayorch.runs.records import (
    SCHEMA_VERSION,
    Attempt,
    Record,
    RunManifest,
    validate_record,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_rayorch.runs.records import PlanRecord, RepairRecord
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = [
    "AggregateRecord",
    "histories",
    "manifest_head",
    "manifest_stamp",
    "read_aggregate_record",
    "restored_aggregate",
    "write_aggregate_record",
]


class AggregateRecord(Record):
    """``run_aggregate.json``: ``run.json``'s head and the run's bounded aggregate."""

    KIND: ClassVar[str] = "run aggregate record"
    FIX: ClassVar[str] = (
        "delete it: the run's state and report are then read from run.json and the "
        "microbatch manifests, and the next run manifest written writes it again"
    )

    schema_version: int = SCHEMA_VERSION
    #: ``run.json`` as this record was written with it: ``{"size", "mtime"}``
    run_manifest: dict[str, Any]
    #: ``run.json`` without its ``microbatches`` listing
    head: dict[str, Any]
    #: microbatches per row, and the rows of committed microbatches (``MicrobatchBin``)
    width: int = Field(ge=1)
    bins: list[dict[str, Any]] = Field(default_factory=list)
    totals: dict[str, int] = Field(default_factory=dict)
    grains: dict[str, int] = Field(default_factory=dict)
    entities: dict[str, int] = Field(default_factory=dict)
    ports: list[str] = Field(default_factory=list)
    #: repaired microbatches: ``{"index", "attempt", "history"}``
    attempts: list[dict[str, Any]] = Field(default_factory=list)
    #: the source rows a report lists (``RunAggregate.report_rows``)
    rows: list[dict[str, Any]] = Field(default_factory=list)
    rows_total: int = Field(default=0, ge=0)
    committed: int = Field(default=0, ge=0)


def manifest_stamp(store: RunStore, run_id: str) -> dict[str, Any] | None:
    """``run.json``'s size and modification time; None without one."""
    path = posixpath.join(store.root, *paths.run_manifest(run_id))
    info = store.fs.get_file_info(path)
    if info.type != pafs.FileType.File:
        return None
    mtime = info.mtime.isoformat() if info.mtime is not None else None
    return {"size": info.size, "mtime": mtime}


def write_aggregate_record(
    store: RunStore, run_id: str, aggregate: RunAggregate, manifest: dict[str, Any]
) -> None:
    """Write the aggregate record of ``aggregate`` and the run manifest ``manifest``,
    stamped with the ``run.json`` just written (nothing when there is none)."""
    stamp = manifest_stamp(store, run_id)
    if stamp is None:
        return
    rows = aggregate.report_rows()
    with aggregate._lock:
        record = AggregateRecord(
            run_manifest=stamp,
            head={k: v for k, v in manifest.items() if k != "microbatches"},
            width=aggregate.width,
            bins=[asdict(b) for _, b in sorted(aggregate.bins.items()) if b.committed],
            totals=dict(aggregate.totals),
            grains=dict(aggregate.grains),
            entities=dict(aggregate.entities),
            ports=list(aggregate.ports),
            attempts=[
                {"index": i, "attempt": attempt, "history": history}
                for i, (attempt, history) in sorted(aggregate.attempts.items())
            ],
            rows_total=aggregate.rows_total,
            committed=aggregate.committed,
            rows=rows,
        )
    store.write_record(paths.run_aggregate(run_id), record)


def read_aggregate_record(
    store: RunStore,
    run_id: str,
    stamp: dict[str, Any] | None = None,
    repairs: Sequence[RepairRecord] | None = None,
) -> AggregateRecord | None:
    """The run's aggregate record while it is current: ``run.json`` is as it was
    written with it (``stamp``: its :func:`manifest_stamp`, when the caller has it),
    and no microbatch committed a repair after it (one manifest read per repair
    record; ``repairs``: the run's, when the caller read them). None otherwise;
    :class:`StoreError` if it is damaged."""
    stamp = stamp or manifest_stamp(store, run_id)
    if stamp is None:
        return None
    record = store.read_record(paths.run_aggregate(run_id), AggregateRecord)
    if record is None or record.run_manifest != stamp:
        return None
    if repairs is None:
        from airflow_provider_rayorch.runs.attempts import repair_records

        repairs = repair_records(store, run_id)
    written = {int(a["index"]): int(a["attempt"]) for a in record.attempts}
    for repair in repairs:
        manifest = store.manifest_record(run_id, repair.index)
        if manifest is not None and (manifest.attempt or 1) > written.get(repair.index, 1):
            return None
    return record


def manifest_head(record: AggregateRecord, store: RunStore, run_id: str) -> RunManifest:
    """The run manifest the record heads (without its listing)."""
    return validate_record(RunManifest, record.head, store.record_uri(paths.run_manifest(run_id)))


def histories(record: AggregateRecord) -> dict[int, list[Attempt]]:
    """The attempt histories of the repaired microbatches, by index."""
    return {
        int(a["index"]): [Attempt.model_validate(h) for h in a["history"]] for a in record.attempts
    }


def restored_aggregate(plan: PlanRecord, record: AggregateRecord) -> RunAggregate:
    """The aggregate the record keeps, for ``plan``'s run: it shows the run (a report)
    but takes no commit (``restored``)."""
    agg = RunAggregate.of(plan)
    agg.restored = True
    agg.width, agg.bins = record.width, {}
    for data in record.bins:
        b = MicrobatchBin(**data)
        agg.bins[b.first // agg.width] = b
    agg.totals, agg.grains = dict(record.totals), dict(record.grains)
    agg.entities, agg.ports = dict(record.entities), list(record.ports)
    agg.attempts = {
        int(a["index"]): (int(a["attempt"]), list(a["history"])) for a in record.attempts
    }
    agg.bad_rows = [r for r in record.rows if r.get("outcome") != "present"]
    agg.good_rows = [r for r in record.rows if r.get("outcome") == "present"]
    agg.rows_total, agg.committed = record.rows_total, record.committed
    return agg
