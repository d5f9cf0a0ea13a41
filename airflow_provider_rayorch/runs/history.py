"""A repaired run's attempt history, as the report and the plugin pages show it.

Read from the run store: each microbatch manifest's ``attempts`` (written by a
repair's commit, :mod:`airflow_provider_rayorch.runs.repair`) and the repair
records ``repairs/mb-N.json`` (:mod:`airflow_provider_rayorch.runs.attempts`),
which also name the repairs that were refused, failed or still run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from airflow_provider_rayorch.runs.records import (
        Attempt,
        MicrobatchManifest,
        RepairRecord,
        RunManifest,
    )

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


def _from_manifest(index: int, entry: Attempt) -> AttemptRow:
    return AttemptRow(
        index=index,
        attempt=entry.attempt,
        kind=entry.kind or "run",
        state=entry.state or "",
        repaired_sources=tuple(entry.repaired_sources or ()),
        at=entry.at,
        job_id=entry.job_id,
    )


def attempt_rows(
    histories: Mapping[int, Iterable[Attempt]], repairs: Iterable[RepairRecord]
) -> list[AttemptRow]:
    """Every attempt of the microbatches that were repaired (or whose repair was
    tried), by microbatch then attempt; an unrepaired microbatch has none.

    :param histories: each microbatch's manifest ``attempts``, by index."""
    rows: dict[tuple[int, int], AttemptRow] = {}
    for index, entries in histories.items():
        for entry in entries:
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


def stale_run_manifest(run_manifest: RunManifest, manifests: Iterable[MicrobatchManifest]) -> bool:
    """A microbatch was repaired after the run manifest was written: the run task
    has not summed the repaired manifests yet."""
    written = {e.index: e.attempt or 1 for e in run_manifest.microbatches or ()}
    return any(
        m.microbatch is not None and (m.attempt or 1) > written.get(m.microbatch.index, 1)
        for m in manifests
    )
