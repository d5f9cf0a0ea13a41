"""A test pipeline over file paths for the lineage tests (run by the fake engine)."""

from __future__ import annotations

from typing import Any

from fake_pipelines import Square

from airflow_provider_rayorch.rayorch.outcomes import ItemOutcome, OutputIssue


class Measure(Square):
    """Outputs each path's length; paths listed in ``poison`` FAIL."""

    def __init__(self, poison: list[str] | None = None) -> None:
        super().__init__()
        self.poison = set(poison or [])

    def compute(self, x: Any) -> Any:
        if x in self.poison:
            return OutputIssue(ItemOutcome.FAILED, f"doc[{x}]: unreadable")
        return len(str(x))
