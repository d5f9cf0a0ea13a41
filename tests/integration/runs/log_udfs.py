"""A pipeline whose actor prints to its stdout: Ray forwards those lines to the
driver, which keeps them in its log in the run store. Its second microbatch waits
for a gate file (the test creates it once the driver printed the first lines), so
the driver does not end before Ray forwarded them."""

from __future__ import annotations

import os
import time

import airflow_provider_rayorch.rayorch as ro


class Shout:
    def __init__(self, gate: str) -> None:
        self.gate = gate

    def run(self, xs: list[int]) -> list[int]:
        token = os.environ.get("SHOUT_TOKEN", "")
        for x in xs:
            print(f"shouted {x} with \x1b[31mtoken={token}\x1b[0m", flush=True)
        deadline = time.monotonic() + 120  # bounded: the test fails, never hangs
        while min(xs) > 1 and not os.path.exists(self.gate) and time.monotonic() < deadline:
            time.sleep(0.1)
        return list(xs)


class Shouting(ro.Pipeline):
    def __init__(self, gate: str = "") -> None:
        self.shout = ro.RayModule(Shout).pre_init(gate).ray_options(batch_size=2, num_cpus=0.5)

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.shout(doc)
