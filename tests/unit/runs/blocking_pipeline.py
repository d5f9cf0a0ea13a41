"""A pipeline on the real engine (``backend="local"``) whose second microbatch never
ends: a driver stopped there has committed the first one."""

from __future__ import annotations

import threading

import airflow_provider_rayorch.rayorch as ro


class BlockFromTwo:
    def run(self, xs: list[int]) -> list[int]:
        if any(x >= 2 for x in xs):
            threading.Event().wait()  # until the process is stopped
        return list(xs)


class BlocksAfterTheFirst(ro.Pipeline):
    def __init__(self) -> None:
        self.step = ro.RayModule(BlockFromTwo).ray_options(batch_size=2)

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.step(doc)
