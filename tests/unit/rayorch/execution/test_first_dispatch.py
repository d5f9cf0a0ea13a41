"""``Executor.first_dispatch_at``: when the current run dispatched its first batch, in
epoch seconds, still told once the timeline's first records are forgotten."""

from __future__ import annotations

import time

import pytest

import airflow_provider_rayorch.rayorch as ro

pytestmark = pytest.mark.timeout(60)


class Double:
    def run(self, xs: list[int]) -> list[int]:
        return [2 * x for x in xs]


class Doubling(ro.Pipeline):
    def __init__(self) -> None:
        self.double = ro.RayModule(Double).ray_options(batch_size=1)

    def forward(self, x: ro.Port) -> ro.Port:
        return self.double(x)


def test_the_first_dispatch_is_told_in_epoch_seconds_after_the_run_began() -> None:
    with ro.Executor(Doubling(), backend="local", progress=False) as executor:
        assert executor.first_dispatch_at() is None
        began = time.time()
        stream = executor.stream(list(range(8)), input_batch_size=2)
        next(stream)
        first = executor.first_dispatch_at()
        assert first is not None
        assert began <= first <= time.time()
        list(stream)
        executor.forget_timeline(1)  # the first dispatch's record is gone
        assert [r["event"] for r in executor.timeline()] == ["report"]
        again = executor.first_dispatch_at()
        assert again == pytest.approx(first, abs=0.01)


def test_each_run_tells_its_own_first_dispatch() -> None:
    with ro.Executor(Doubling(), backend="local", progress=False) as executor:
        list(executor.stream([1, 2], input_batch_size=1))
        first = executor.first_dispatch_at()
        between = time.time()
        list(executor.stream([3, 4], input_batch_size=1))
        second = executor.first_dispatch_at()
        assert first is not None
        assert second is not None
        assert first <= between <= second
