"""What the driver reads from the engine as it runs, with a default for an engine
that does not tell it (the tests' fakes)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.runs import live_reports

if TYPE_CHECKING:
    from airflow_provider_rayorch.runs.aggregate import RunAggregate

__all__ = [
    "add_timing",
    "first_dispatch_at",
    "forget_timeline",
    "grains_dispatched",
    "microbatch_elapsed",
]


def microbatch_elapsed(mb: Any, since: float) -> float:
    """The microbatch's own run time (engine metrics), else the time since ``since``."""
    metrics = dict(getattr(mb, "metrics", None) or {})
    if "finished_s" in metrics and "started_s" in metrics:
        return max(float(metrics["finished_s"]) - float(metrics["started_s"]), 0.0)
    return max(time.monotonic() - since, 0.0)


def grains_dispatched(executor: Any) -> int:
    """Grains the executor dispatched so far; call on the driver thread only."""
    metrics = getattr(executor, "call_metrics", None)
    if metrics is None:  # an engine without per-Call metrics (tests' fakes)
        return 0
    return sum(int(c.get("grains_dispatched", 0)) for c in metrics())


def forget_timeline(executor: Any) -> None:
    """Keep the engine's timeline to what reports read (an engine that keeps none:
    nothing to do)."""
    forget = getattr(executor, "forget_timeline", None)
    if forget is not None:
        forget(live_reports.REPORT_TIMELINE)


def add_timing(aggregate: RunAggregate, mb: Any) -> None:
    """The microbatch's engine timings (seconds on the timeline's clock; 0 unmeasured)."""
    metrics = dict(getattr(mb, "metrics", None) or {})
    started, finished = metrics.get("started_s", 0.0), metrics.get("finished_s", 0.0)
    aggregate.timing(mb.index, float(started), float(finished))


def first_dispatch_at(executor: Any) -> float:
    """When the run's first batch was dispatched (epoch seconds), as the engine tells
    it; now for an engine that does not."""
    told = getattr(executor, "first_dispatch_at", None)
    at = told() if told is not None else None
    return time.time() if at is None else float(at)
