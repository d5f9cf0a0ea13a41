"""A pipeline on the real engine (``backend="local"``) whose second microbatch never
ends: a driver stopped there has committed the first one."""

from __future__ import annotations

import threading

from tests.integration.rayorch.udfs import OneModule


class BlockFromTwo:
    def run(self, xs: list[int]) -> list[int]:
        if any(x >= 2 for x in xs):
            threading.Event().wait()  # until the process is stopped
        return list(xs)


class BlocksAfterTheFirst(OneModule):
    def __init__(self) -> None:
        super().__init__(BlockFromTwo, batch_size=2)
