"""The failed-ratio rule of the Airflow layer: read the verdict the driver recorded.

The operator, the microbatch sensor, the run sensor, the triggers and lineage take
a lineage summary's verdict with :func:`judge_summary`: the one the driver recorded
in the summary (:mod:`airflow_provider_rayorch.runs.verdict`), judged from the
counts only for a summary written without one. A failed verdict carries the message
the task fails with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.runs.verdict import CAUSES_SHOWN, recorded_verdict

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["CAUSES_SHOWN", "Verdict", "judge_summary"]


@dataclass(frozen=True)
class Verdict:
    """A summary and its verdict against ``max_failed_ratio``; ``message`` is set when
    it failed."""

    summary: dict[str, Any]
    message: str | None

    @property
    def ok(self) -> bool:
        return self.message is None


def judge_summary(summary: Mapping[str, Any], max_failed_ratio: float) -> Verdict:
    """The summary with ``state`` set to its recorded verdict for ``max_failed_ratio``
    (judged from its counts when it records none), and why it failed if so."""
    verdict = recorded_verdict(summary, max_failed_ratio)
    result = {**summary, "state": verdict["state"]}
    if verdict["state"] == "success":
        return Verdict(result, None)
    return Verdict(result, str(verdict.get("message") or "failed ratio exceeded"))
