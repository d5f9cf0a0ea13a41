"""The failed-ratio verdict, judged once by the driver and recorded in each summary.

A summary's ``state`` is its verdict: ``failed`` when (FAILED + SUPPRESSED) / total
exceeds ``max_failed_ratio`` (DROPPED counts as fine). The driver (and a repair's
commit, and the run task's rewrite of a repaired run's manifest) records it with
:func:`judged` as ``verdict``: ``{"state", "failed_ratio", "max_failed_ratio",
"message"}``, ``message`` saying why when it failed. Readers take the recorded
verdict (:func:`recorded_verdict`); a summary written without one (by 0.1.0, schema
version 1) is judged from its counts by the same rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.rayorch.summary import failed_ratio, summary_state

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["CAUSES_SHOWN", "judged", "recorded_verdict", "verdict_of"]

#: How many failure causes a failed verdict's message quotes.
CAUSES_SHOWN = 5


def verdict_of(
    sources: Mapping[str, int], max_failed_ratio: float, failures: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """The verdict on counts ``sources`` against ``max_failed_ratio``."""
    ratio = failed_ratio(sources)
    state = summary_state(sources, max_failed_ratio)
    message = None
    if state == "failed":
        shown = list(failures)[:CAUSES_SHOWN]
        causes = "; ".join(f"source {f['source']}: {f['cause']}" for f in shown)
        message = f"failed ratio {ratio:.3f} exceeds max_failed_ratio {max_failed_ratio}: {causes}"
    return {
        "state": state,
        "failed_ratio": round(ratio, 6),
        "max_failed_ratio": float(max_failed_ratio),
        "message": message,
    }


def judged(summary: Mapping[str, Any], max_failed_ratio: float) -> dict[str, Any]:
    """``summary`` with its verdict recorded (``verdict``) and its ``state`` set by it."""
    verdict = verdict_of(summary["sources"], max_failed_ratio, summary.get("failures") or ())
    return {**summary, "state": verdict["state"], "verdict": verdict}


def recorded_verdict(summary: Mapping[str, Any], max_failed_ratio: float) -> dict[str, Any]:
    """The verdict the summary records for ``max_failed_ratio``; judged from its
    counts when it records none (a summary written before verdicts were) or one for
    another ratio."""
    verdict = summary.get("verdict")
    if isinstance(verdict, dict) and verdict.get("max_failed_ratio") == float(max_failed_ratio):
        return dict(verdict)
    return verdict_of(summary["sources"], max_failed_ratio, summary.get("failures") or ())
