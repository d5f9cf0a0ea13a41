"""What a run returns: per-microbatch results and the whole run's ``RunResult``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..summary import run_summary

if TYPE_CHECKING:
    from ..runtime.state import FinishedMicrobatch
    from .driving import Delivery

__all__ = ["MicrobatchResult", "RunResult"]


def _shape(per_port: list[list[Any]]) -> Any:
    return per_port[0] if len(per_port) == 1 else tuple(per_port)


@dataclass
class MicrobatchResult:
    """One completed source microbatch, as ``Executor.stream`` yields it: its outputs
    and its counters; it holds nothing of the run's lineage or of remote values."""

    index: int
    first_source: int
    count: int
    #: One entry per source row (a tuple of such lists when forward returns several Ports).
    outputs: Any
    output_names: tuple[str, ...]
    metrics: dict[str, Any]
    _microbatch: FinishedMicrobatch = field(repr=False)

    def lineage(self, max_failed_ratio: float = 0.0, **identity: Any) -> dict[str, Any]:
        """The microbatch's lineage summary (API.md section 3).

        ``identity`` may set ``run_id``, ``pipeline``, ``fingerprint`` and ``outputs_uri``.
        """
        return self._microbatch.lineage(max_failed_ratio, **identity)

    def per_port(self) -> list[list[Any]]:
        return list(self.outputs) if isinstance(self.outputs, tuple) else [self.outputs]


@dataclass
class RunResult:
    """The outcome of one finite run."""

    #: One entry per source row, in source order (a tuple of lists for several Ports).
    outputs: Any
    elapsed_s: float
    #: Per Call: name, replicas, rpcs, grains dispatched, retries, suppressed, batch sizes, ...
    calls: list[dict[str, Any]]
    #: Per source microbatch: index, first_source, count, start and finish, outcome counts.
    input_batches: list[dict[str, Any]]
    pipeline: str
    fingerprint: str
    metrics: dict[str, Any] = field(default_factory=dict)
    microbatches: list[MicrobatchResult] = field(default_factory=list, repr=False)
    #: Batch dispatches and reports over time (seconds from the run's start), see
    #: ``timeline_records``.
    timeline: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def lineage(self, max_failed_ratio: float = 0.0, **identity: Any) -> dict[str, Any]:
        """The run's lineage summary (API.md section 3): JSON values only."""
        identity.setdefault("pipeline", self.pipeline)
        identity.setdefault("fingerprint", self.fingerprint)
        return run_summary(
            (mb.lineage(max_failed_ratio) for mb in self.microbatches),
            elapsed_s=self.elapsed_s,
            max_failed_ratio=max_failed_ratio,
            **identity,
        )


def assemble(
    parts: list[MicrobatchResult],
    n_ports: int,
    started: float,
    finished: float,
    *,
    calls: list[dict[str, Any]],
    pipeline: str,
    fingerprint: str,
    metrics: dict[str, Any],
    timeline: list[dict[str, Any]] | None = None,
) -> RunResult:
    """Join microbatch results (any completion order) into source order."""
    ordered = sorted(parts, key=lambda p: p.index)
    per_port: list[list[Any]] = [[] for _ in range(n_ports)]
    for part in ordered:
        for k, values in enumerate(part.per_port()):
            per_port[k].extend(values)
    batches = [
        {
            "index": p.index,
            "first_source": p.first_source,
            "count": p.count,
            "started_s": round(p._microbatch.started - started, 6),
            "finished_s": round((p._microbatch.finished or finished) - started, 6),
            **p._microbatch.outcome_counts(),
        }
        for p in ordered
    ]
    return RunResult(
        outputs=_shape(per_port),
        elapsed_s=finished - started,
        calls=calls,
        input_batches=batches,
        pipeline=pipeline,
        fingerprint=fingerprint,
        metrics=metrics,
        microbatches=ordered,
        timeline=timeline or [],
    )


def timeline_records(records: list[tuple[Any, ...]], started: float) -> list[dict[str, Any]]:
    """The core's timeline as JSON records with times relative to ``started``."""
    out = []
    for record in records:
        kind, t, call, worker, batch = record[:5]
        entry = {
            "event": kind,
            "t": round(t - started, 6),
            "call": call,
            "worker": str(worker),
            "batch": batch,
        }
        if kind == "dispatch":
            entry.update(size=record[5], queued=record[6])
        else:
            entry.update(busy_s=round(record[5], 6), outcome=record[6])
            if len(record) > 7:  # a lost batch's node
                entry["node"] = record[7]
        out.append(entry)
    return out


def microbatch_result(
    delivery: Delivery, output_names: tuple[str, ...], started: float
) -> MicrobatchResult:
    mb = delivery.microbatch
    return MicrobatchResult(
        index=mb.index,
        first_source=mb.first_source,
        count=mb.count,
        outputs=_shape(delivery.outputs),
        output_names=output_names,
        metrics={
            "started_s": round(mb.started - started, 6),
            "finished_s": round((mb.finished or mb.started) - started, 6),
            "grains_dispatched": mb.dispatched,
            "grains_retried": mb.retried,
            "grains_suppressed": mb.suppressed,
            "entities": dict(mb.entity_counts),
        },
        _microbatch=mb.record(),
    )
