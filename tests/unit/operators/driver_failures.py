"""A pipeline that plans in the task's process and fails in its driver's, before any
commit (as one with an argument the driver cannot rebuild does)."""

from __future__ import annotations

import os

import airflow_provider_rayorch.rayorch as ro


class Double:
    def run(self, xs: list[int]) -> list[int]:
        return [2 * x for x in xs]


class FailsInTheDriver(ro.Pipeline):
    """Builds in the process ``planner_pid`` only; anywhere else it raises."""

    def __init__(self, planner_pid: int) -> None:
        if os.getpid() != planner_pid:
            raise TypeError("cannot pickle '_thread.lock' object (a pre_init argument)")
        self.double = ro.RayModule(Double).ray_options(batch_size=2)

    def forward(self, x: ro.Port) -> ro.Port:
        return self.double(x)
