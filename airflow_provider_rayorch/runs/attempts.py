"""Repair bookkeeping in the run store: attempt history, repair records, the repair lease.

Layout, beside :mod:`.store`'s::

    <root>/<run_id>/outputs/mb-00003/attempt-2/<port>.parquet   repair attempt 2's files
    <root>/<run_id>/repairs/mb-00003.json                        the microbatch's last repair
    <root>/<run_id>/locks/repair.json                            the run's repair lease

A repair attempt writes every row of the microbatch (kept PRESENT/DROPPED rows
copied, repaired rows new) under its attempt folder, then replaces the manifest
atomically; the manifest names ``attempt`` and ``files`` and is the commit point.

A repair record ``{"index", "attempt", "job_id", "status", "owner", "at",
"message"}`` says which Ray job repairs a microbatch (``status``: ``running``,
``committed``, ``refused`` or ``failed``), so the run task can wait for it on
whatever head runs it. The lease is one file created with an exclusive create
(``O_EXCL`` on a local disk) holding its owner and expiry: two repairs of one run
never run at once, and a holder that died frees it when its lease expires.
"""

from __future__ import annotations

import json
import os
import posixpath
import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

if TYPE_CHECKING:
    from .store import RunStore

__all__ = [
    "REPAIR_ACTIVE",
    "RepairLease",
    "read_repair",
    "read_repairs",
    "write_repair",
]

#: A repair record status that means its job may still write.
REPAIR_ACTIVE = "running"
_LOCK = "repair.json"


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


class RepairLease:
    """The run's repair lease: ``acquire()`` is an exclusive create of the lock file.

    ``owner`` names the holder (for example a task instance); ``ttl_s`` bounds how
    long a holder that stopped renewing keeps it. An expired lease is taken over by
    first moving the stale file aside (one mover wins), then creating anew.
    """

    def __init__(self, store: RunStore, run_id: str, owner: str, ttl_s: float = 600.0) -> None:
        self.store, self.run_id, self.owner, self.ttl_s = store, run_id, owner, float(ttl_s)
        self.path = posixpath.join(store.root, run_id, "locks", _LOCK)

    def holder(self) -> dict[str, Any] | None:
        """The current lease record ``{"owner", "expires"}`` (expired or not), if any."""
        text = self.store._read_text(self.path)
        if text is None:
            return None
        try:
            return dict(json.loads(text))
        except ValueError:  # a half-written lock on an object store: treat as expired
            return {"owner": "?", "expires": 0.0}

    def _record(self) -> bytes:
        return json.dumps({"owner": self.owner, "expires": time.time() + self.ttl_s}).encode()

    def _create(self) -> bool:
        fs = self.store.fs
        fs.create_dir(posixpath.dirname(self.path), recursive=True)
        if isinstance(fs, pafs.LocalFileSystem):
            # write a private file, then hard-link it into place: the link fails if the
            # lock exists, and a reader never sees a lock without its content
            tmp = f"{self.path}.new-{uuid.uuid4().hex}"
            with open(tmp, "wb") as f:
                f.write(self._record())
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
            return True
        # object stores: a put after a check (stores with conditional puts make it exact)
        if self.store._exists(self.path):
            return False
        with fs.open_output_stream(self.path) as f:
            f.write(self._record())
        return (self.holder() or {}).get("owner") == self.owner

    def acquire(self) -> bool:
        """Take the lease if it is free, expired or already ours; False if held."""
        if self._create():
            return True
        current = self.holder()
        if current is None:
            return self._create()
        if current.get("owner") == self.owner:
            self.renew()
            return True
        if float(current.get("expires") or 0.0) > time.time():
            return False
        stale = f"{self.path}.stale-{uuid.uuid4().hex}"
        try:
            self.store.fs.move(self.path, stale)
        except (FileNotFoundError, OSError):
            return False  # someone else moved it first
        moved = self.store._read_text(stale)
        if moved is not None and dict(json.loads(moved or "{}")) != current:
            # a fresh lease replaced the expired one meanwhile: put it back, we lose
            self.store.fs.move(stale, self.path)
            return False
        self.store.fs.delete_file(stale)
        return self._create()

    def renew(self) -> None:
        """Push our lease's expiry forward (only while we hold it)."""
        if (self.holder() or {}).get("owner") == self.owner:
            self.store._write_atomic(self.path, self._record())

    def release(self) -> None:
        """Give the lease back if we hold it."""
        if (self.holder() or {}).get("owner") == self.owner:
            self.store.fs.delete_file(self.path)
