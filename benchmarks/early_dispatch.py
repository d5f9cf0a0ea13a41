"""Prototype of a proposed engine change, for measurement only: dispatch to actors
as they come up instead of waiting for every pool to be ready (cold runs).

``early_dispatch()`` swaps, in this process only, the Ray backend the
``Executor`` builds for a subclass whose ``open()`` starts the actors without
waiting for them, and whose driving loop reports ``WorkerAdded`` to the core as
each actor's ``ready()`` resolves (the core accepts workers at any time). The
engine itself is unchanged; see ANALYSIS.md, "Engine changes recommended".
Actor start failures are not reported as nicely as by the real backend.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import ray

from airflow_provider_rayorch.rayorch.execution import ray_backend
from airflow_provider_rayorch.rayorch.execution.driving import drive
from airflow_provider_rayorch.rayorch.runtime.events import WorkerAdded

if TYPE_CHECKING:
    from collections.abc import Iterator

    from airflow_provider_rayorch.rayorch.runtime.core import Core, Microbatch

__all__ = ["EarlyDispatchBackend", "early_dispatch"]


class EarlyDispatchBackend(ray_backend.RayBackend):
    """A Ray backend that starts dispatching to the first actors that are up."""

    def open(self) -> None:
        if not ray.is_initialized():
            ray.init(**{"address": self.address or "local", **self.ray_init_kwargs})
            self._owns_ray = True
        self._check_resources()
        # Round-robin over the pools, so every pool's first actor starts early.
        most = max((m.options.replicas for m in self.plan.modules), default=0)
        keys = [
            self._spawn(module.id)
            for r in range(most)
            for module in self.plan.modules
            if r < module.options.replicas
        ]
        #: ready() reference -> actor key, for actors not yet given to a core.
        self._starting = {self._actors[k].ready.remote(): k for k in keys}

    def drive(self, core: Core) -> Iterator[Microbatch]:
        inflight: dict[Any, Any] = {}
        starting: dict[Any, str] = getattr(self, "_starting", {})
        up: list[str] = getattr(self, "_up", [])
        self._starting, self._up = starting, up

        def arrived(refs: list[Any]) -> list[str]:
            keys = []
            for ref in refs:
                ray.get(ref)
                keys.append(starting.pop(ref))
            up.extend(keys)
            return keys

        # Start with the first actor that is up; while others start, a pool without
        # an actor yet just waits (``has_work`` stays true, ``advance`` blocks on them).
        if not up:
            arrived(ray.wait(list(starting), num_returns=1)[0])
        if starting:
            arrived(ray.wait(list(starting), num_returns=len(starting), timeout=0)[0])
        first = list(up)

        def advance() -> list[Any]:
            if starting:
                if inflight:
                    done = ray.wait(list(starting), num_returns=len(starting), timeout=0)[0]
                else:
                    done = ray.wait(list(starting), num_returns=1)[0]
                commands: list[Any] = []
                for key in arrived(done):
                    commands += core.handle(WorkerAdded(key, self._module_of[key]))
                if commands or not inflight:
                    return commands
            return self._collect(core, inflight)

        yield from drive(
            core,
            [(k, self._module_of[k], None) for k in first],
            submit=lambda command: self._submit(command, inflight),
            advance=advance,
            has_work=lambda: bool(inflight) or bool(starting),
            deliver=self._materialize_outputs,
        )


@contextmanager
def early_dispatch() -> Iterator[None]:
    """Within the block, new ``Executor``s use ``EarlyDispatchBackend``."""
    original = ray_backend.RayBackend
    ray_backend.RayBackend = EarlyDispatchBackend  # type: ignore[misc]
    try:
        yield
    finally:
        ray_backend.RayBackend = original  # type: ignore[misc]
