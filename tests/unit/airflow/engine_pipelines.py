"""Small pipelines on the real engine (run with backend="local" in unit tests)."""

from __future__ import annotations

import airflow_provider_rayorch.rayorch as ro


class Join:
    def run(self, a: list[object], b: list[object]) -> list[str]:
        return [f"{x}-{y}" for x, y in zip(a, b, strict=True)]


class TwoColumns(ro.Pipeline):
    """forward takes two Ports: one per source column."""

    def __init__(self) -> None:
        self.join = ro.RayModule(Join).ray_options(batch_size=2)

    def forward(self, a: ro.Port, b: ro.Port) -> ro.Port:
        return self.join(a, b)
