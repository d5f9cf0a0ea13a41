"""The running aggregate of a run's commits: what the live report and the run manifest
show, kept by the driver as it commits, in a size that does not grow with the run.

Each commit adds its manifest: its counts, timings, state and the bounded ``sample``
of its source rows (:func:`sample_of`, written by :mod:`.commit`). The aggregate
holds at most :data:`MAX_BINS` rows of consecutive microbatches (:class:`MicrobatchBin`:
summed counts, min/max timings), the run's totals and entities, its first
:data:`~airflow_provider_rayorch.rayorch.summary.FAILURES_CAP` failures, at most
:data:`MAX_ROWS` source rows of each kind (not present first, then present), the
attempt history of repaired microbatches, and one byte per planned microbatch (its
state), whatever the number of sources. A manifest without a ``sample`` (an older
commit) gives its ``failures`` instead. :meth:`RunAggregate.run_summary` is the run
manifest these commits sum to, without reading them back.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Unpack

from airflow_provider_rayorch.rayorch.errors import StoreError, UsageError
from airflow_provider_rayorch.rayorch.summary import (
    FAILURES_CAP,
    assemble_run_summary,
    summary_state,
)
from airflow_provider_rayorch.runs.records import microbatch_count

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from pydantic import BaseModel

    from airflow_provider_rayorch.rayorch.summary import SummaryLabels
    from airflow_provider_rayorch.runs.records import (
        Failure,
        MicrobatchManifest,
        PlanRecord,
        SampleRow,
    )

__all__ = [
    "MAX_BINS",
    "MAX_ROWS",
    "SAMPLE_ROWS",
    "MicrobatchBin",
    "RunAggregate",
    "sample_of",
]

#: Source rows a manifest's sample keeps per Port: this many not present, then present.
SAMPLE_ROWS = 50
#: Source rows a report lists (not present first, then present): the aggregate keeps
#: this many of each kind. Reached once 10 full microbatches are committed, so a report
#: lists as many rows whatever the run's length past that.
MAX_ROWS = 500
#: Rows of consecutive microbatches the aggregate keeps, one per percent of a longer run
#: (a run of at most this many microbatches has one row each).
MAX_BINS = 100
_OUTCOMES = ("total", "present", "dropped", "failed", "suppressed")
_GRAINS = ("dispatched", "retried", "suppressed")
_RESTORED = "an aggregate read back from the store"
#: a microbatch's byte in :attr:`RunAggregate.states`
_PENDING, _SUCCESS, _FAILED = 0, 1, 2


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
class MicrobatchBin:
    """The committed microbatches among indices ``first..last`` (one row of the
    report's microbatch table): their summed counts and timings."""

    first: int
    last: int
    #: the first source of the bin (of its first committed microbatch once one is), and
    #: the committed sources
    first_source: int
    count: int
    #: committed microbatches, and how many of them failed (their manifests' verdict)
    committed: int
    failed: int
    #: counts by outcome (total, present, dropped, failed, suppressed), summed
    sources: dict[str, int]
    #: item counts per grain (dispatched, retried, suppressed), summed
    grains: dict[str, int]
    #: the microbatches' own run times: summed, shortest and longest
    elapsed_s: float
    min_elapsed_s: float
    max_elapsed_s: float
    #: the highest committed attempt
    attempt: int = 1
    #: driver timings (seconds on the engine's clock): earliest start, latest finish
    started_s: float | None = None
    finished_s: float | None = None

    @property
    def index(self) -> int:
        return self.first

    def add(
        self,
        first_source: int,
        count: int,
        sources: Mapping[str, int],
        grains: Mapping[str, int],
        elapsed: float,
        attempt: int,
        failed: bool,
    ) -> None:
        """Sum one committed microbatch's figures into the bin."""
        self.first_source = min(self.first_source, first_source) if self.committed else first_source
        self.count += count
        self.committed += 1
        self.failed += int(failed)
        for key, n in sources.items():
            self.sources[key] = self.sources.get(key, 0) + n
        for key, n in grains.items():
            self.grains[key] = self.grains.get(key, 0) + n
        self.elapsed_s += elapsed
        self.min_elapsed_s = min(self.min_elapsed_s, elapsed)
        self.max_elapsed_s = max(self.max_elapsed_s, elapsed)
        self.attempt = max(self.attempt, attempt)

    @property
    def state(self) -> str:
        """``failed`` when any committed microbatch failed, else ``success``."""
        return "failed" if self.failed else "success"


@dataclass
class RunAggregate:
    """One run's commits so far; :meth:`add` at each commit, :meth:`snapshot` for a
    report on another thread."""

    plan: PlanRecord
    #: microbatches per bin: the plan's microbatches over :data:`MAX_BINS`, rounded up
    width: int = 1
    #: bin number (index // width) -> its committed microbatches
    bins: dict[int, MicrobatchBin] = field(default_factory=dict)
    #: one byte per microbatch: 0 not committed, 1 success, 2 failed (judged against
    #: the plan's ``max_failed_ratio``, as the run manifest lists it)
    states: bytearray = field(default_factory=bytearray)
    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_OUTCOMES, 0))
    grains: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_GRAINS, 0))
    entities: dict[str, int] = field(default_factory=dict)
    ports: list[str] = field(default_factory=list)
    #: ``(index, failure)`` of the first failures by microbatch index (FAILURES_CAP)
    failures: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    #: repaired microbatches only: index -> (committed attempt, its ``attempts`` history)
    attempts: dict[int, tuple[int, list[dict[str, Any]]]] = field(default_factory=dict)
    #: committed microbatches whose ``(first_source, count)`` is not the plan's layout
    odd_refs: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: rows ``{"source", "outcome", "cause", "microbatch", "port"}``, each list capped
    bad_rows: list[dict[str, Any]] = field(default_factory=list)
    good_rows: list[dict[str, Any]] = field(default_factory=list)
    #: every committed source row (sources times Ports), sampled or not
    rows_total: int = 0
    committed: int = 0
    last_commit: datetime | None = None
    #: read back from the run's aggregate record (:mod:`.aggregate_record`): it shows
    #: the run, but holds no per-microbatch states to add commits to or sum a manifest of
    restored: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def of(cls, plan: PlanRecord, manifests: Iterable[MicrobatchManifest] = ()) -> RunAggregate:
        """The aggregate of ``plan``'s run holding ``manifests`` (committed earlier)."""
        total = microbatch_count(plan.total_sources, plan.batch_size)
        agg = cls(plan, width=max(-(-total // MAX_BINS), 1), states=bytearray(total))
        for number in range(-(-total // agg.width)):
            agg._bin(number * agg.width)
        for manifest in manifests:
            agg.add(manifest)
        return agg

    def report_rows(self) -> list[dict[str, Any]]:
        """The source rows a report lists: not present first, then present, at most
        :data:`MAX_ROWS` in all."""
        with self._lock:
            rows = self.bad_rows[:MAX_ROWS]
            return rows + self.good_rows[: MAX_ROWS - len(rows)]

    def entries(self) -> int:
        """How many entries the aggregate keeps (bins, rows, failures, histories, ...):
        bounded, whatever the number of commits."""
        kept = (self.bins, self.bad_rows, self.good_rows, self.failures, self.attempts)
        return sum(map(len, kept)) + len(self.odd_refs) + len(self.entities)

    def add(self, manifest: MicrobatchManifest) -> None:
        """Count one committed microbatch (once: its counts are summed into its bin)."""
        ref = manifest.microbatch
        if ref is None:
            raise StoreError(
                f"a microbatch manifest of run {self.plan.run_id} names no microbatch; "
                f"{manifest.FIX}"
            )
        if self.restored:
            raise UsageError(f"{_RESTORED} of run {self.plan.run_id} takes no commit")
        index = ref.index
        ports = (manifest.outputs.ports if manifest.outputs else None) or ["out"]
        sources, grains = _counts(manifest.sources), _counts(manifest.grains)
        elapsed = manifest.elapsed_s or 0.0
        judged = summary_state(sources, self.plan.max_failed_ratio) if sources else "success"
        full = len(self.bad_rows) >= MAX_ROWS and len(self.good_rows) >= MAX_ROWS
        rows = [] if full else _rows(manifest, index, ports)
        failures = [f.model_dump(mode="json", exclude_unset=True) for f in manifest.failures or ()]
        with self._lock:
            if index >= len(self.states):
                self.states.extend(bytes(index + 1 - len(self.states)))
            if self.states[index] != _PENDING:
                raise UsageError(
                    f"microbatch {index} of run {self.plan.run_id} is in the aggregate "
                    "already: a commit is added once"
                )
            self.states[index] = _FAILED if judged == "failed" else _SUCCESS
            self.committed += 1
            if _layout(self.plan, index) != (ref.first_source, ref.count):
                self.odd_refs[index] = (ref.first_source, ref.count)
            self.ports = self.ports or ports
            self._bin(index).add(
                ref.first_source,
                ref.count,
                sources,
                grains,
                elapsed,
                manifest.attempt or 1,
                manifest.state == "failed",
            )
            self._count(sources, grains, ref.count)
            for name, n in (manifest.entities or {}).items():
                self.entities[name] = self.entities.get(name, 0) + int(n)
            if failures:
                merged = [*self.failures, *((index, f) for f in failures)]
                merged.sort(key=lambda pair: pair[0])  # stable: a microbatch's order kept
                self.failures = merged[:FAILURES_CAP]
            if manifest.attempts:
                history = [a.model_dump(mode="json", exclude_none=True) for a in manifest.attempts]
                self.attempts[index] = (manifest.attempt or 1, history)
            for row in rows:
                kept = self.good_rows if row["outcome"] == "present" else self.bad_rows
                if len(kept) < MAX_ROWS:
                    kept.append(row)
            self.last_commit = datetime.now(UTC)

    def timing(self, index: int, started_s: float, finished_s: float) -> None:
        """A committed microbatch's driver timings (its bin keeps the earliest start
        and the latest finish)."""
        with self._lock:
            b = self.bins.get(index // self.width)
            if b is not None:
                b.started_s = started_s if b.started_s is None else min(b.started_s, started_s)
                b.finished_s = finished_s if b.finished_s is None else max(b.finished_s, finished_s)

    def timings(self) -> list[dict[str, Any]]:
        """``{"index", "started_s", "finished_s"}`` of each bin with driver timings,
        under its first microbatch's index, and its ``last`` one when it holds several
        (the report's per-microbatch timings)."""
        with self._lock:
            return [
                {"index": b.first, "started_s": b.started_s, "finished_s": b.finished_s}
                | ({"last": b.last} if b.last != b.first else {})
                for _, b in sorted(self.bins.items())
                if b.started_s is not None and b.finished_s is not None
            ]

    def _bin(self, index: int) -> MicrobatchBin:
        """The bin of microbatch ``index`` (made empty when it is not yet)."""
        number = index // self.width
        b = self.bins.get(number)
        if b is None:
            first = number * self.width
            b = self.bins[number] = MicrobatchBin(
                first=first,
                last=min(first + self.width, len(self.states)) - 1,
                first_source=max(_layout(self.plan, first)[0], 0),
                count=0,
                committed=0,
                failed=0,
                sources={},
                grains={},
                elapsed_s=0.0,
                min_elapsed_s=float("inf"),
                max_elapsed_s=0.0,
            )
        return b

    def _count(self, sources: dict[str, int], grains: dict[str, int], count: int) -> None:
        for key in self.totals:
            self.totals[key] += sources.get(key, 0)
        for key in self.grains:
            self.grains[key] += grains.get(key, 0)
        self.rows_total += sources.get("total", count) * max(len(self.ports), 1)

    def run_summary(
        self,
        *,
        elapsed_s: float,
        **labels: Unpack[SummaryLabels],
    ) -> dict[str, Any]:
        """The run manifest these commits sum to (what
        :func:`~airflow_provider_rayorch.rayorch.summary.run_summary` gives of their
        manifests), judged against ``max_failed_ratio`` (the plan's: the microbatches'
        states were judged against it as they came)."""
        if self.restored:
            raise UsageError(f"{_RESTORED} of run {self.plan.run_id} sums no run manifest")
        max_failed_ratio = labels.get("max_failed_ratio", 0.0)
        if max_failed_ratio != self.plan.max_failed_ratio:
            raise UsageError(
                f"the aggregate of run {self.plan.run_id} judged its microbatches against "
                f"a failed ratio of {self.plan.max_failed_ratio}, not {max_failed_ratio}"
            )
        with self._lock:
            sources = {k: self.totals[k] for k in _OUTCOMES}
            listing = [self._entry(i, code) for i, code in enumerate(self.states) if code]
            return assemble_run_summary(
                sources,
                self.entities,
                self.grains,
                (f for _, f in self.failures),
                listing,
                elapsed_s=elapsed_s,
                **labels,
            )

    def _entry(self, index: int, code: int) -> dict[str, Any]:
        first, count = self.odd_refs.get(index) or _layout(self.plan, index)
        entry: dict[str, Any] = {
            "index": index,
            "first_source": first,
            "count": count,
            "state": "failed" if code == _FAILED else "success",
        }
        repaired = self.attempts.get(index)
        if repaired is not None:
            attempt, history = repaired
            entry["attempt"] = attempt
            entry["attempts"] = [
                {"attempt": int(a["attempt"]), "state": a.get("state"), "at": a.get("at")}
                for a in history
            ]
        return entry

    def snapshot(self) -> RunAggregate:
        """A copy that later commits leave alone (rows are shared: nothing changes them
        once added; bins are copied)."""
        with self._lock:
            return replace(
                self,
                bins={
                    k: replace(b, sources=dict(b.sources), grains=dict(b.grains))
                    for k, b in self.bins.items()
                },
                states=bytearray(self.states),
                totals=dict(self.totals),
                grains=dict(self.grains),
                entities=dict(self.entities),
                ports=list(self.ports),
                failures=list(self.failures),
                attempts=dict(self.attempts),
                odd_refs=dict(self.odd_refs),
                bad_rows=list(self.bad_rows),
                good_rows=list(self.good_rows),
                _lock=threading.Lock(),
            )


def _layout(plan: PlanRecord, index: int) -> tuple[int, int]:
    """``(first_source, count)`` of microbatch ``index`` in ``plan`` (``(-1, -1)``
    outside it)."""
    try:
        return plan.microbatch(index)
    except StoreError:
        return -1, -1


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
