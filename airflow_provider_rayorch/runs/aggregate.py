"""The running aggregate of a run's commits: what the live report shows, kept by the
driver as it commits, so that a report reads nothing that grows with the run.

Each commit adds its manifest: its counts, timings, state and the bounded ``sample``
of its source rows (:func:`sample_of`, written by :mod:`.commit`). The aggregate
holds one small entry per committed microbatch, the run's totals and at most
:data:`MAX_ROWS` source rows of each kind (not present first, then present), whatever
the number of sources. A manifest without a ``sample`` (an older commit) gives its
``failures`` instead.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.rayorch.errors import StoreError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from pydantic import BaseModel

    from airflow_provider_rayorch.runs.records import (
        Failure,
        MicrobatchManifest,
        PlanRecord,
        SampleRow,
    )

__all__ = ["MAX_ROWS", "SAMPLE_ROWS", "CommittedMicrobatch", "RunAggregate", "sample_of"]

#: Source rows a manifest's sample keeps per Port: this many not present, then present.
SAMPLE_ROWS = 20
#: Source rows of each kind (not present, present) the aggregate keeps for a report.
MAX_ROWS = 5000
_OUTCOMES = ("total", "present", "dropped", "failed", "suppressed")
_GRAINS = ("dispatched", "retried", "suppressed")


def sample_of(
    ports: Mapping[str, Sequence[tuple[str, str | None, Any]]], sources: Sequence[int]
) -> dict[str, list[dict[str, Any]]]:
    """``{port: rows}``: per Port, the first :data:`SAMPLE_ROWS` rows not present, then
    the first present ones up to :data:`SAMPLE_ROWS` in all when room is left."""
    out: dict[str, list[dict[str, Any]]] = {}
    for port, rows in ports.items():
        bad: list[dict[str, Any]] = []
        good: list[dict[str, Any]] = []
        for source, (outcome, cause, _) in zip(sources, rows, strict=True):
            kept = good if outcome == "present" else bad
            if len(kept) < SAMPLE_ROWS:
                kept.append({"source": int(source), "outcome": outcome, "cause": cause or ""})
            if len(bad) >= SAMPLE_ROWS:
                break
        out[port] = bad + good[: max(SAMPLE_ROWS - len(bad), 0)]
    return out


@dataclass
class CommittedMicrobatch:
    """What the report shows of one committed microbatch."""

    index: int
    first_source: int
    count: int
    #: its verdict: ``success`` or ``failed``
    state: str
    #: counts by outcome (present, dropped, failed, suppressed)
    sources: dict[str, int]
    #: item counts per grain (documents, pages, ...)
    grains: dict[str, int]
    elapsed_s: float
    attempt: int = 1
    #: a repaired microbatch's attempt history (the manifest's ``attempts``)
    attempts: list[dict[str, Any]] | None = None


@dataclass
class RunAggregate:
    """One run's commits so far; :meth:`add` at each commit, :meth:`snapshot` for a
    report on another thread."""

    plan: PlanRecord
    microbatches: dict[int, CommittedMicrobatch] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_OUTCOMES, 0))
    grains: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_GRAINS, 0))
    ports: list[str] = field(default_factory=list)
    #: rows ``{"source", "outcome", "cause", "microbatch", "port"}``, each list capped
    bad_rows: list[dict[str, Any]] = field(default_factory=list)
    good_rows: list[dict[str, Any]] = field(default_factory=list)
    #: every committed source row (sources times Ports), sampled or not
    rows_total: int = 0
    last_commit: datetime | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def of(cls, plan: PlanRecord, manifests: Iterable[MicrobatchManifest] = ()) -> RunAggregate:
        """The aggregate of ``plan``'s run holding ``manifests`` (committed earlier)."""
        agg = cls(plan)
        for manifest in manifests:
            agg.add(manifest)
        return agg

    def add(self, manifest: MicrobatchManifest) -> None:
        """Count one committed microbatch (a commit again replaces its counts)."""
        ref = manifest.microbatch
        if ref is None:
            raise StoreError(
                f"a microbatch manifest of run {self.plan.run_id} names no microbatch; "
                f"{manifest.FIX}"
            )
        index = ref.index
        ports = (manifest.outputs.ports if manifest.outputs else None) or ["out"]
        mb = CommittedMicrobatch(
            index=index,
            first_source=ref.first_source,
            count=ref.count,
            state=manifest.state or "success",
            sources=_counts(manifest.sources),
            grains=_counts(manifest.grains),
            elapsed_s=manifest.elapsed_s or 0.0,
            attempt=manifest.attempt or 1,
            attempts=[a.model_dump(mode="json", exclude_unset=True) for a in manifest.attempts]
            if manifest.attempts
            else None,
        )
        rows = _rows(manifest, index, ports)
        with self._lock:
            old = self.microbatches.pop(index, None)
            if old is not None:
                self._count(old, -1)
                self.bad_rows = [r for r in self.bad_rows if r["microbatch"] != index]
                self.good_rows = [r for r in self.good_rows if r["microbatch"] != index]
            self.ports = self.ports or ports
            self.microbatches[index] = mb
            self._count(mb, 1)
            for row in rows:
                kept = self.good_rows if row["outcome"] == "present" else self.bad_rows
                if len(kept) < MAX_ROWS:
                    kept.append(row)
            self.last_commit = datetime.now(UTC)

    def _count(self, mb: CommittedMicrobatch, sign: int) -> None:
        for key in self.totals:
            self.totals[key] += sign * mb.sources.get(key, 0)
        for key in self.grains:
            self.grains[key] += sign * mb.grains.get(key, 0)
        self.rows_total += sign * mb.sources.get("total", mb.count) * max(len(self.ports), 1)

    def snapshot(self) -> RunAggregate:
        """A copy that later commits leave alone (its rows and entries are not copied:
        nothing changes them once added)."""
        with self._lock:
            return replace(
                self,
                microbatches=dict(self.microbatches),
                totals=dict(self.totals),
                grains=dict(self.grains),
                ports=list(self.ports),
                bad_rows=list(self.bad_rows),
                good_rows=list(self.good_rows),
                _lock=threading.Lock(),
            )


def _counts(counts: BaseModel | None) -> dict[str, int]:
    """A manifest's counts (``sources``, ``grains``) by name, extra keys included."""
    return {} if counts is None else {k: int(v) for k, v in counts.model_dump().items()}


def _rows(manifest: MicrobatchManifest, index: int, ports: list[str]) -> list[dict[str, Any]]:
    """The manifest's sampled rows; its failures (on its first Port) without a sample."""
    sample: Mapping[str, Sequence[SampleRow | Failure]] = (
        manifest.sample
        if manifest.sample is not None
        else {ports[0]: list(manifest.failures or ())}
    )
    return [
        {
            "source": row.source,
            "outcome": row.outcome,
            "cause": row.cause or "",
            "microbatch": index,
            "port": port,
        }
        for port, rows in sample.items()
        for row in rows
    ]
