"""Repair bookkeeping in the run store: attempt history, repair records, the repair lease.

Layout, beside :mod:`.store`'s::

    <root>/<run_id>/outputs/mb-00003/attempt-2/<port>.parquet   repair attempt 2's files
    <root>/<run_id>/repairs/mb-00003.json                        the microbatch's last repair
    <root>/<run_id>/locks/repair.json                            the run's repair lease (lease.py)

A repair attempt writes every row of the microbatch (kept PRESENT/DROPPED rows
copied, repaired rows new) under its attempt folder, then replaces the manifest
atomically; the manifest names ``attempt`` and ``files`` and is the commit point.

A repair record ``{"index", "attempt", "job_id", "status", "owner", "at",
"message"}`` says which Ray job repairs a microbatch (``status``: ``running``,
``committed``, ``refused`` or ``failed``), so the run task can wait for it on
whatever head runs it. The run's repair lease (two repairs of one run never run at
once) lives in :mod:`.lease`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.runs import paths
from airflow_provider_rayorch.runs.records import WRITE_FIX, RepairRecord, validate_record

if TYPE_CHECKING:
    from .store import RunStore

__all__ = [
    "REPAIR_ACTIVE",
    "repair_record",
    "repair_records",
    "write_repair",
]

#: A repair record status that means its job may still write.
REPAIR_ACTIVE = "running"


def write_repair(store: RunStore, run_id: str, index: int, **record: Any) -> dict[str, Any]:
    """Write (replace) microbatch ``index``'s repair record (its message stripped of
    credential values); returns it."""
    parts = paths.repair(run_id, index)
    full = {"index": int(index), "at": datetime.now(UTC).isoformat(), "message": None, **record}
    typed = validate_record(RepairRecord, full, store.record_uri(parts), fix=WRITE_FIX)
    store.write_record(parts, typed)
    return typed.to_dict()


def repair_record(store: RunStore, run_id: str, index: int) -> RepairRecord | None:
    """Microbatch ``index``'s last repair record, None if it was never repaired."""
    return store.read_record(paths.repair(run_id, index), RepairRecord)


def repair_records(store: RunStore, run_id: str) -> list[RepairRecord]:
    """Every microbatch's last repair record, by index."""
    found = (
        store.read_record((*paths.repairs(run_id), name), RepairRecord)
        for name in store.record_names(paths.repairs(run_id))
    )
    return [record for record in found if record is not None]
