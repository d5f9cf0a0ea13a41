"""The run's repair lease: at most one repair of a run at a time, on every store kind.

The lease is one record, ``<root>/<run_id>/locks/repair.json``::

    {"schema_version": 1, "owner": "dag/run/task[0] try 2", "expires": 1767225600.0,
     "nonce": "..."}

``owner`` is null once released. A lease written as ``{"version": 1, ...}`` (or with no
version) reads as schema version 1. The rule, and the only place it lives:

- the lease may be taken when it is absent, released, expired (``expires`` is past),
  or already ours (same ``owner``);
- every change is ONE conditional write of the store (:mod:`.conditional`): taking an
  absent lease is a create-if-absent; taking over a released or expired one, renewing
  and releasing are a replace-if-unchanged of the version just read. Of two racing
  writers the store lets exactly one through; the other reads the winner next time;
- a release writes a released record, conditionally: it never frees a lease that
  someone else took meanwhile (a successor's lease survives a late release);
- every record carries a fresh ``nonce``, so two versions never share a token (S3's
  ETag is a hash of the content).

Bound: one holder at a time, as the store decides. A holder that has not renewed for
``ttl_s`` seconds loses the lease to the next taker, and its next ``renew()`` raises
:class:`RepairLeaseLost`. ``expires`` is the writer's wall clock, compared with the
reader's: hosts' clocks must agree to well within ``ttl_s`` (600 s by default). A
store whose filesystem cannot write conditionally refuses to take a lease
(:class:`~.conditional.ConditionalWritesUnsupported`) rather than pretend.
"""

from __future__ import annotations

import json
import posixpath
import time
import uuid
from typing import TYPE_CHECKING, ClassVar

from pydantic import ConfigDict

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs import paths
from airflow_provider_rayorch.runs.conditional import conditional_writes
from airflow_provider_rayorch.runs.records import (
    SCHEMA_VERSION,
    Record,
    encode_record,
    validate_record,
)

if TYPE_CHECKING:
    from airflow_provider_rayorch.runs.conditional import ConditionalWrites
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["LeaseRecord", "RepairLease", "RepairLeaseLost"]


class RepairLeaseLost(StoreError):
    """A holder's lease was taken over (it had expired) before it renewed it."""


class LeaseRecord(Record):
    """``locks/repair.json``: the run's repair lease (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    KIND: ClassVar[str] = "repair lease"
    FIX: ClassVar[str] = (
        "if no repair of the run is running, delete the file and clear the task again"
    )

    schema_version: int = SCHEMA_VERSION
    owner: str | None
    expires: float
    #: unique per write, so each version has its own token
    nonce: str = ""

    def free_for(self, owner: str, now: float) -> bool:
        """May ``owner`` take this lease at ``now``?"""
        return self.owner is None or self.owner == owner or self.expires <= now

    @classmethod
    def decode(cls, data: bytes, uri: str) -> LeaseRecord:
        """The stored lease; its first shape's ``version`` key is its schema version.
        :class:`StoreError` naming ``uri`` when it does not parse or has another version."""
        try:
            raw = json.loads(data)
        except ValueError as exc:
            raise StoreError(f"{cls.KIND} {uri} is not JSON ({exc}); {cls.FIX}") from None
        if isinstance(raw, dict) and "version" in raw and cls.VERSION_FIELD not in raw:
            raw[cls.VERSION_FIELD] = raw.pop("version")
        return validate_record(cls, raw, uri)


class RepairLease:
    """The repair lease of one run, as ``owner`` (for example a task instance) sees it."""

    def __init__(self, store: RunStore, run_id: str, owner: str, ttl_s: float = 600.0) -> None:
        self.store, self.run_id, self.owner, self.ttl_s = store, run_id, owner, float(ttl_s)
        self.parts = paths.lease(run_id)
        self.path = posixpath.join(store.root, *self.parts)
        self.uri = store.record_uri(self.parts)
        self._writes: ConditionalWrites | None = None

    def __repr__(self) -> str:
        return f"RepairLease({self.uri!r}, owner={self.owner!r})"

    # -- reading (any store) -------------------------------------------------------------
    def _parse(self, data: bytes) -> LeaseRecord:
        return LeaseRecord.decode(data, self.uri)

    def held(self) -> LeaseRecord | None:
        """The lease as stored while someone holds it (expired or not); None when free."""
        data = self.store.read_bytes(self.parts)
        record = None if data is None else self._parse(data)
        return None if record is None or record.owner is None else record

    # -- changing (conditional writes only) ------------------------------------------------
    def _conditional(self) -> ConditionalWrites:
        if self._writes is None:
            self._writes = conditional_writes(self.store)
        return self._writes

    def _current(self) -> tuple[LeaseRecord, str] | None:
        found = self._conditional().read(self.path)
        return None if found is None else (self._parse(found[0]), found[1])

    def _record(self, owner: str | None, expires: float) -> bytes:
        return encode_record(LeaseRecord(owner=owner, expires=expires, nonce=uuid.uuid4().hex))

    def _mine(self) -> bytes:
        return self._record(self.owner, time.time() + self.ttl_s)

    def acquire(self) -> bool:
        """Take the lease if it is free, expired or already ours; False if someone else
        holds it or won a race for it (try again later)."""
        current = self._current()
        if current is None:
            return self._conditional().create_if_absent(self.path, self._mine()) is not None
        record, token = current
        if not record.free_for(self.owner, time.time()):
            return False
        return self._conditional().replace_if_unchanged(self.path, self._mine(), token) is not None

    def renew(self) -> None:
        """Push our lease's expiry forward; RepairLeaseLost if it is no longer ours."""
        current = self._current()
        if (
            current is not None
            and current[0].owner == self.owner
            and self._conditional().replace_if_unchanged(self.path, self._mine(), current[1])
        ):
            return
        holder = None if current is None else current[0].owner
        raise RepairLeaseLost(
            f"repair lease {self.uri}: {self.owner!r} no longer holds it (now: "
            f"{holder or 'nobody'}); it expired after {self.ttl_s:g} s without a renewal "
            "and was taken over. Its repair must stop: clear the task again to repair anew"
        )

    def release(self) -> None:
        """Give the lease back if we hold it; a lease someone else took stays theirs."""
        current = self._current()
        if current is not None and current[0].owner == self.owner:
            self._conditional().replace_if_unchanged(self.path, self._record(None, 0.0), current[1])
