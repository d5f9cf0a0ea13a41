"""Pipelines only the end-to-end tests use."""

from __future__ import annotations

import airflow_provider_rayorch.rayorch as ro


class Echo:
    def run(self, xs: list[object]) -> list[object]:
        return list(xs)


class DoesNotCompile(ro.Pipeline):
    """Reduces a Port that was never expanded: a CompileError at compile time."""

    def __init__(self) -> None:
        self.echo = ro.RayModule(Echo)

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.echo(ro.F.reduce(doc))


class WaitForGate:
    """Holds every batch until the ``gate`` file exists (the test opens it), at most
    ``timeout_s`` seconds; then passes the rows through."""

    def __init__(self, gate: str, timeout_s: float = 180.0) -> None:
        self.gate, self.timeout_s = gate, timeout_s

    def run(self, xs: list[object]) -> list[object]:
        import os
        import time

        deadline = time.monotonic() + self.timeout_s
        while not os.path.exists(self.gate):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the gate {self.gate} was not opened in {self.timeout_s}s")
            time.sleep(0.2)
        return list(xs)


class Gated(ro.Pipeline):
    """One stage that waits for a gate file: the job cannot commit before the test says."""

    def __init__(self, gate: str) -> None:
        self.wait = (
            ro.RayModule(WaitForGate)
            .pre_init(gate=gate)
            .ray_options(replicas=1, batch_size=4, num_cpus=0.25)
        )

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.wait(doc)
