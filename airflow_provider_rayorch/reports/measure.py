"""The driver's measurements as report data (:class:`.model.ReportData`).

The driver holds the engine's timeline and Call metrics in memory; this module
reduces them to the plots and figures a report shows, at the page's resolution, so
``report.json`` stays small however long the run.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from . import _plots as plots
from .model import CallMetrics, ReportData, Timing

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["measure"]

_CALL_FIELDS = frozenset(CallMetrics.model_fields) - {"name", "replicas"}


def _call(c: Mapping[str, Any]) -> CallMetrics:
    figures = {k: float(c.get(k) or 0.0) for k in _CALL_FIELDS}
    return CallMetrics(name=str(c.get("name")), replicas=int(c.get("replicas") or 1), **figures)


def _lost(timeline: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in timeline if r.get("event") == "report" and r.get("outcome") == "lost"]


def _lost_actors(timeline: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each actor whose batch ended ``lost`` (it died with the batch), once, in order."""
    return list(dict.fromkeys(f"{r['call']} \u00b7 {r['worker']}" for r in _lost(timeline)))


def _lost_nodes(timeline: Sequence[Mapping[str, Any]]) -> list[str]:
    """``"<node>: <actor>, <actor>"`` for each node that lost actors with a batch in
    flight, in order (losses whose node the engine did not know are left out)."""
    by_node: dict[str, dict[str, None]] = {}
    for r in _lost(timeline):
        if r.get("node"):
            by_node.setdefault(str(r["node"]), {})[f"{r['call']} \u00b7 {r['worker']}"] = None
    return [f"{node}: {', '.join(actors)}" for node, actors in by_node.items()]


def measure(
    run_id: str,
    timeline: Sequence[Mapping[str, Any]] = (),
    calls: Sequence[Mapping[str, Any]] = (),
    microbatches: Sequence[Mapping[str, Any]] | None = None,
    *,
    now: datetime | None = None,
) -> ReportData:
    """Report data from ``Executor.timeline()`` records, ``RunResult.calls`` and the
    per-microbatch timings ``{"index", "started_s", "finished_s"}`` (None: a run whose
    commit times only the manifests know, as after a repair)."""
    timings = None
    if microbatches is not None:
        timings = [
            Timing(
                index=int(m["index"]),
                started_s=float(m.get("started_s", 0.0)),
                finished_s=float(m.get("finished_s", 0.0)),
                last=None if m.get("last") is None else int(m["last"]),
            )
            for m in microbatches
        ]
    span = plots.span_of(timeline, *[t.finished_s for t in timings or ()])
    data = ReportData(
        run_id=run_id,
        written_at=(now or datetime.now(UTC)).isoformat(),
        span_s=span,
        timings=timings,
        calls=[_call(c) for c in calls],
    )
    if not timeline:
        return data
    return data.model_copy(
        update={
            "timeline": plots.busy_timeline(timeline, span),
            "queue": plots.queue_depth(timeline, span),
            "batch_sizes": plots.batch_size_plots(calls, timeline),
            "lost_actors": _lost_actors(timeline),
            "lost_nodes": _lost_nodes(timeline),
        }
    )
