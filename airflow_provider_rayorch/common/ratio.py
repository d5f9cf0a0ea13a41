"""The failed-ratio rule of the Airflow layer, in one function.

The operator, the microbatch sensor and the run sensor all judge a lineage summary
with :func:`judge_summary`: ``state`` is re-evaluated against the task's own
``max_failed_ratio`` ((FAILED + SUPPRESSED) / total; DROPPED counts as fine), and
a failed verdict carries the message the task fails with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["Verdict", "judge_summary"]

#: How many failure causes a failed verdict's message quotes.
CAUSES_SHOWN = 5


@dataclass(frozen=True)
class Verdict:
    """A summary judged against ``max_failed_ratio``; ``message`` is set when it failed."""

    summary: dict[str, Any]
    message: str | None

    @property
    def ok(self) -> bool:
        return self.message is None


def judge_summary(summary: Mapping[str, Any], max_failed_ratio: float) -> Verdict:
    """The summary with ``state`` set for ``max_failed_ratio``, and why it failed if so."""
    from airflow_provider_rayorch.rayorch.summary import failed_ratio, summary_state

    result = dict(summary)
    result["state"] = summary_state(result["sources"], max_failed_ratio)
    if result["state"] == "success":
        return Verdict(result, None)
    shown = list(result.get("failures") or [])[:CAUSES_SHOWN]
    causes = "; ".join(f"source {f['source']}: {f['cause']}" for f in shown)
    return Verdict(
        result,
        f"failed ratio {failed_ratio(result['sources']):.3f} exceeds max_failed_ratio "
        f"{max_failed_ratio}: {causes}",
    )
