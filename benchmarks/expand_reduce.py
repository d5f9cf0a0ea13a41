"""A tiny expand/reduce pipeline, for the driver-memory benchmark and the streaming-memory
tests (importable by Ray workers)."""

from __future__ import annotations

from typing import Any

import airflow_provider_rayorch.rayorch as ro

#: A source n becomes n % 3 pages: at most this many.
PAGES_PER_SOURCE = 2


class Split:
    def run(self, xs: list[int]) -> list[list[int]]:
        return [list(range(x % 3)) for x in xs]


class Double:
    def run(self, xs: list[int]) -> list[int]:
        return [2 * x for x in xs]


class Join:
    def run(self, groups: list[list[int]], xs: list[int]) -> list[int]:
        return [x + sum(g) for g, x in zip(groups, xs, strict=True)]


class Tiny(ro.Pipeline):
    """source -> pages -> doubled pages -> source + their sum."""

    def __init__(self, batch_size: int = 64) -> None:
        self.split = ro.RayModule(Split).ray_options(batch_size=batch_size)
        self.double = ro.RayModule(Double).ray_options(batch_size=batch_size)
        self.join = ro.RayModule(Join).ray_options(batch_size=batch_size)

    def forward(self, x: Any) -> Any:
        pages = ro.F.expand(self.split(x), domain="page")
        return self.join(ro.F.reduce(self.double(pages)), x)


def expected(n: int) -> list[int]:
    """:class:`Tiny`'s outputs for the sources ``0 .. n-1``."""
    return [x + sum(2 * p for p in range(x % 3)) for x in range(n)]
