"""A repaired run's attempt history, as the report and the plugin pages show it.

Read from the run store: each microbatch manifest's ``attempts`` (written by a
repair's commit, :mod:`airflow_provider_rayorch.runs.repair`) and the repair
records ``repairs/mb-N.json`` (:mod:`airflow_provider_rayorch.runs.attempts`),
which also name the repairs that were refused, failed or still run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from airflow_provider_rayorch.runs.records import RepairRecord

__all__ = ["AttemptRow", "attempt_rows", "repairs_note", "stale_run_manifest"]


@dataclass(frozen=True)
class AttemptRow:
    """One attempt of one microbatch (``kind``: ``run`` | ``repair``)."""

    index: int
    attempt: int
    kind: str
    #: the attempt's outcome: success | failed, or a repair record's refused | failed | running
    state: str
    repaired_sources: tuple[int, ...] = ()
    at: str | None = None
    job_id: str | None = None
    message: str = ""

    @property
    def when(self) -> str:
        """``at`` as ``YYYY-MM-DD HH:MM UTC`` (empty when unknown)."""
        if not self.at:
            return ""
        try:
            at = datetime.fromisoformat(str(self.at))
        except ValueError:
            return str(self.at)
        at = at if at.tzinfo else at.replace(tzinfo=UTC)
        return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _from_manifest(index: int, entry: Mapping[str, Any]) -> AttemptRow:
    return AttemptRow(
        index=index,
        attempt=int(entry.get("attempt") or 1),
        kind=str(entry.get("kind") or "run"),
        state=str(entry.get("state") or ""),
        repaired_sources=tuple(int(s) for s in entry.get("repaired_sources") or ()),
        at=entry.get("at"),
        job_id=entry.get("job_id"),
    )


def attempt_rows(
    manifests: Mapping[int, Mapping[str, Any]], repairs: Iterable[RepairRecord]
) -> list[AttemptRow]:
    """Every attempt of the microbatches that were repaired (or whose repair was
    tried), by microbatch then attempt; an unrepaired microbatch has none."""
    rows: dict[tuple[int, int], AttemptRow] = {}
    for index, manifest in manifests.items():
        for entry in manifest.get("attempts") or ():
            row = _from_manifest(index, entry)
            rows[(index, row.attempt)] = row
    for record in repairs:
        index, attempt = record.index, record.attempt
        if (index, attempt) in rows:
            # the manifest's entry is the commit itself: newer than a record that still
            # says the repair runs (its job commits before the sensor records it)
            continue
        rows[(index, attempt)] = AttemptRow(
            index=index,
            attempt=attempt,
            kind="repair",
            state=record.status,
            at=record.at,
            job_id=record.job_id,
            message=record.message or "",
        )
    return [rows[k] for k in sorted(rows)]


def repairs_note(rows: Sequence[AttemptRow]) -> str | None:
    """One line for the runs page: each microbatch's last repair and its outcome."""
    last: dict[int, AttemptRow] = {}
    for row in rows:
        if row.kind == "repair":
            last[row.index] = row
    if not last:
        return None
    parts = []
    for index, row in sorted(last.items()):
        text = f"mb {index} attempt {row.attempt} {row.state}"
        if row.state in ("refused", "failed") and row.message:
            text += f" ({row.message})"
        parts.append(text)
    return "repairs: " + "; ".join(parts)


def stale_run_manifest(
    run_manifest: Mapping[str, Any], manifests: Iterable[Mapping[str, Any]]
) -> bool:
    """A microbatch was repaired after the run manifest was written: the run task
    has not summed the repaired manifests yet."""
    written = {
        int(e["index"]): int(e.get("attempt") or 1)
        for e in run_manifest.get("microbatches") or ()
        if isinstance(e, dict) and "index" in e
    }
    for manifest in manifests:
        index = int(manifest["microbatch"]["index"])
        if int(manifest.get("attempt") or 1) > written.get(index, 1):
            return True
    return False
