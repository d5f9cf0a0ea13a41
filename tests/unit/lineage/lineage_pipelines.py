"""A test pipeline over file paths for the lineage tests (run by the fake engine)."""

from __future__ import annotations

from typing import Any

from fake_pipelines import Square

import airflow_provider_rayorch.rayorch as ro
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


class _Length:
    def run(self, paths: list[str]) -> list[Any]:
        return [ro.RecordFailure("unreadable") if p.endswith("bad.pdf") else len(p) for p in paths]


class PathLengths(ro.Pipeline):
    """A real engine pipeline (run by ``backend="local"``, no Ray): each path's length;
    a path ending in ``bad.pdf`` FAILS."""

    def __init__(self) -> None:
        self.length = ro.RayModule(_Length).ray_options(replicas=1, batch_size=4)

    def forward(self, paths: ro.Port) -> ro.Port:
        return self.length(paths)


class DoesNotCompile(ro.Pipeline):
    """Fails at compile time: ``forward`` branches on a Port."""

    def __init__(self) -> None:
        self.length = ro.RayModule(_Length).ray_options(replicas=1, batch_size=4)

    def forward(self, paths: ro.Port) -> ro.Port:
        return self.length(paths) if paths else paths
