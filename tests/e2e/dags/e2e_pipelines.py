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
    """Holds every batch until its gate file exists (the test opens it), at most
    ``timeout_s`` seconds; then passes the rows through. A batch of rows that are all in
    ``first`` waits for ``first_gate`` instead, so the test can let one microbatch
    commit while the others stay held."""

    def __init__(
        self,
        gate: str,
        timeout_s: float = 180.0,
        first_gate: str = "",
        first: tuple[str, ...] | list[str] = (),
    ) -> None:
        self.gate, self.timeout_s = gate, timeout_s
        self.first_gate, self.first = first_gate, frozenset(first)

    def run(self, xs: list[object]) -> list[object]:
        import os
        import time

        gate = self.first_gate if self.first_gate and set(xs) <= self.first else self.gate
        deadline = time.monotonic() + self.timeout_s
        while not os.path.exists(gate):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the gate {gate} was not opened in {self.timeout_s}s")
            time.sleep(0.2)
        return list(xs)


class Gated(ro.Pipeline):
    """One stage that waits for a gate file: the job cannot commit before the test says.
    Rows in ``first`` wait for ``first_gate`` (when given) instead."""

    def __init__(
        self,
        gate: str,
        first_gate: str = "",
        first: tuple[str, ...] | list[str] = (),
        timeout_s: float = 180.0,
    ) -> None:
        self.wait = (
            ro.RayModule(WaitForGate)
            .pre_init(gate=gate, timeout_s=timeout_s, first_gate=first_gate, first=list(first))
            .ray_options(replicas=1, batch_size=4, num_cpus=0.25)
        )

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.wait(doc)
