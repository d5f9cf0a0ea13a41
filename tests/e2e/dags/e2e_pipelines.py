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
