"""Fences for repair attempts: one writer per attempt folder, one commit per manifest version.

The repair lease (:mod:`.lease`) keeps two repairs of a run apart while it is held.
These fences cover what a lease cannot: a holder that stalled past its lease's
expiry while a successor repaired the same microbatch. Both would number their
attempt ``n + 1`` and write into the same attempt folder.

- Before a repair writes attempt ``n``'s files it *claims* the attempt: it creates
  ``<run>/repairs/claims/mb-00003-attempt-2.json`` with the store's create-if-absent,
  so a second writer of that attempt is refused before it writes a byte.
- Its commit replaces the manifest only if the manifest is still the version it read
  (replace-if-unchanged), so a repair that read a manifest another repair has since
  replaced never overwrites it.

Both use the store's conditional writes (:mod:`.conditional`): local disks and S3.
A claim is an :class:`AttemptClaim` record; one written before claims had a schema
version reads as version 1.
"""

from __future__ import annotations

import posixpath
from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs.records import (
    SCHEMA_VERSION,
    WRITE_FIX,
    Record,
    encode_record,
    validate_record,
)

from . import paths
from .conditional import conditional_writes

if TYPE_CHECKING:
    from .store import RunStore

__all__ = ["AttemptClaim", "AttemptConflict", "claim_attempt", "read_claim"]


class AttemptConflict(StoreError):
    """Another repair claimed the same attempt, or committed the microbatch meanwhile."""


class AttemptClaim(Record):
    """``repairs/claims/mb-NNNNN-attempt-N.json``: who writes microbatch ``index``'s
    attempt ``attempt``, claimed ``at``."""

    KIND: ClassVar[str] = "attempt claim"
    FIX: ClassVar[str] = (
        "if no repair of the run is running, delete it and clear the microbatch task again"
    )

    schema_version: int = SCHEMA_VERSION
    index: int = Field(ge=0)
    attempt: int = Field(ge=1)
    owner: str
    at: str | None = None


def read_claim(store: RunStore, run_id: str, index: int, attempt: int) -> AttemptClaim | None:
    """The claim on microbatch ``index``'s attempt ``attempt``, None when unclaimed."""
    return store.read_record(paths.claim(run_id, index, attempt), AttemptClaim)


def claim_attempt(store: RunStore, run_id: str, index: int, attempt: int, owner: str) -> None:
    """Claim microbatch ``index``'s attempt ``attempt`` for ``owner``, or raise
    :class:`AttemptConflict` when another repair holds it."""
    parts = paths.claim(run_id, index, attempt)
    record = validate_record(
        AttemptClaim,
        {"index": index, "attempt": attempt, "owner": owner, "at": _now()},
        store.record_uri(parts),
        fix=WRITE_FIX,
    )
    path = posixpath.join(store.root, *parts)
    if conditional_writes(store).create_if_absent(path, encode_record(record)) is None:
        held = read_claim(store, run_id, index, attempt)
        by = f"{held.owner!r}" if held is not None else "another repair"
        raise AttemptConflict(
            f"microbatch {index} of run {run_id!r}: attempt {attempt} is already claimed by "
            f"{by} ({store.record_uri(parts)}); nothing was written. Two repairs "
            "of one microbatch ran at once (a lease expired while its holder still ran): "
            "let the other finish, then clear the task again if sources are still failed"
        )


def _now() -> str:
    return datetime.now(UTC).isoformat()
