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


class DivMod:
    def run(self, xs: list[int]) -> tuple[list[int], list[int]]:
        return [x // 3 for x in xs], [x % 3 for x in xs]


class TwoOutputs(ro.Pipeline):
    """forward returns two Ports: one Parquet file per Port and microbatch."""

    def __init__(self) -> None:
        self.divmod = ro.RayModule(DivMod).returns(2).ray_options(batch_size=4)

    def forward(self, x: ro.Port) -> tuple[ro.Port, ro.Port]:
        q, r = self.divmod(x)
        return q, r
