"""Figures of the Airflow-path section: medians per variant, event percentiles and
their goals (the runs' goals against the Ray Data tasks are in :mod:`.goals`)."""

from __future__ import annotations

import statistics
from typing import Any

from .split import SPLIT

__all__ = ["percentile", "summarize_events", "summarize_runs"]


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` percentile (0..100) by linear interpolation between closest ranks."""
    xs = sorted(values)
    if not xs:
        return None
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = int(pos), min(int(pos) + 1, len(xs) - 1)
    return round(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo), 3)


def _median(values: list[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return round(statistics.median(xs), 3) if xs else None


def summarize_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """``{variant: {"median": {figure: s}, "runs": [...], "failed": n}}``."""
    out: dict[str, Any] = {}
    for variant in dict.fromkeys(r["variant"] for r in runs):
        mine = [r for r in runs if r["variant"] == variant]
        ok = [r for r in mine if r["state"] == "success"]
        names = list(dict.fromkeys(k for r in ok for k in r["figures"]))
        out[variant] = {
            "median": {k: _median([r["figures"].get(k) for r in ok]) for k in names},
            "runs": mine,
            "failed": len(mine) - len(ok),
        }
    return out


def summarize_events(files: list[dict[str, Any]], poll_s: float) -> dict[str, Any]:
    """p50/p95 of landing to committed output against the goals: issue 29's (p50 at
    most the poll interval + 3 s, p95 at most the poll interval + 6 s) and issue 21's
    (p50 at most the poll interval plus the run's own time, the median ``prepare``
    task, plus 10 s)."""
    lat = [f["latency_s"] for f in files if f.get("latency_s") is not None]
    own = _median([f.get("prepare_s") for f in files])
    p50, p95 = percentile(lat, 50), percentile(lat, 95)
    parts = [
        "landing_to_run_queued_s",
        "run_queued_to_prepare_start_s",
        "head_task_s",
        "prepare_start_to_commit_s",
        "prepare_start_to_job_start_s",
        "job_start_to_commit_s",
        *SPLIT,
        "prepare_s",
        "commit_to_run_success_s",
    ]

    def goal(target: str, measured: float | None, budget: float | None) -> dict[str, Any]:
        met = None if measured is None or budget is None else measured <= budget
        return {"target": target, "budget_s": budget, "measured_s": measured, "met": met}

    return {
        "poll_interval_s": poll_s,
        "files": files,
        "p50_s": p50,
        "p95_s": p95,
        "median": {k: _median([f.get(k) for f in files]) for k in parts},
        "goals": [
            goal("p50 <= poll interval + 3 s (issue 29)", p50, poll_s + 3.0),
            goal("p95 <= poll interval + 6 s (issue 29)", p95, poll_s + 6.0),
            goal(
                "p50 <= poll interval + run's own time + 10 s (issue 21)",
                p50,
                None if own is None else round(poll_s + own + 10.0, 3),
            ),
        ],
    }
