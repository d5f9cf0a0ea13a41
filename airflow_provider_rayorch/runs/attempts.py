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

import json
import posixpath
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

if TYPE_CHECKING:
    from .store import RunStore

__all__ = [
    "REPAIR_ACTIVE",
    "read_repair",
    "read_repairs",
    "write_repair",
]

#: A repair record status that means its job may still write.
REPAIR_ACTIVE = "running"


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _repair_path(store: RunStore, run_id: str, index: int) -> str:
    return posixpath.join(store.root, run_id, "repairs", f"mb-{index:05d}.json")


def write_repair(store: RunStore, run_id: str, index: int, **record: Any) -> dict[str, Any]:
    """Write (replace) microbatch ``index``'s repair record (its message stripped of
    credential values); returns it."""
    from .store import sanitize_message

    full = {"index": int(index), "at": _now(), "message": None, **record}
    if full["message"] is not None:
        full["message"] = sanitize_message(str(full["message"]))
    path = _repair_path(store, run_id, index)
    store._write_atomic(path, json.dumps(full, sort_keys=True).encode())
    return full


def read_repair(store: RunStore, run_id: str, index: int) -> dict[str, Any] | None:
    text = store._read_text(_repair_path(store, run_id, index))
    return None if text is None else dict(json.loads(text))


def read_repairs(store: RunStore, run_id: str) -> list[dict[str, Any]]:
    """Every microbatch's last repair record, by index."""
    base = posixpath.join(store.root, run_id, "repairs")
    infos = store.fs.get_file_info(pafs.FileSelector(base, allow_not_found=True))
    records = []
    for info in sorted(infos, key=lambda i: i.base_name):
        if info.type == pafs.FileType.File and info.base_name.endswith(".json"):
            text = store._read_text(info.path)
            if text is not None:
                records.append(dict(json.loads(text)))
    return records
