"""Pipelines on the real engine (``backend="local"``) whose outputs test what the run
store can hold."""

from __future__ import annotations

from typing import Any

import airflow_provider_rayorch.rayorch as ro
from tests.integration.rayorch.udfs import OneModule


class Weird:
    """Neither pyarrow nor JSON can encode it."""


class MaybeWeird:
    def run(self, xs: list[int]) -> list[Any]:
        return [Weird() if x == 1 else {"x": x} for x in xs]


class Weirdo(ro.Pipeline):
    """Source 1's output is a ``Weird`` object; the others are dicts."""

    def __init__(self) -> None:
        self.make = ro.RayModule(MaybeWeird).ray_options(batch_size=4)

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.make(doc)


class SplitWeird:
    def run(self, xs: list[int]) -> tuple[list[Any], list[Any]]:
        return [x for x in xs], [Weird() if x == 2 else x for x in xs]


class TwoPortsOneWeird(ro.Pipeline):
    """Port 2 of source 2 cannot be stored: source 2 fails on both Ports."""

    def __init__(self) -> None:
        self.split = ro.RayModule(SplitWeird).returns(2).ray_options(batch_size=4)

    def forward(self, doc: ro.Port) -> tuple[ro.Port, ro.Port]:
        a, b = self.split(doc)
        return a, b


#: Set by a test once the driver's progress ticker printed a line.
TICKED = __import__("threading").Event()


class AwaitTick:
    def run(self, xs: list[int]) -> list[int]:
        TICKED.wait(10)  # bounded: the test fails on its assertions, never hangs
        return list(xs)


class Slow(OneModule):
    """Its first microbatch waits until the progress ticker has printed a line."""

    def __init__(self) -> None:
        super().__init__(AwaitTick, batch_size=2)
