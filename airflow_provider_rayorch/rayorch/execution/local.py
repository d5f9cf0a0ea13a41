"""The in-process reference backend: the same core, real UDF instances, no Ray."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..runtime.events import (
    BatchFinished,
    BatchRaised,
    BatchRejected,
    Dispatch,
    Event,
    WorkerAdded,
    WorkerLost,
)
from ..runtime.lineage import ValueOps
from .driving import Delivery, drive
from .worker import instantiate, run_batch

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..program.plan import Plan
    from ..runtime.core import Core

__all__ = ["Chaos", "LocalBackend"]


@dataclass(frozen=True)
class Chaos:
    """Schedule perturbations for testing the contract (all off by default).

    The local backend then completes batches in a random order, reports some
    twice, loses workers with batches on them (and reports their batches late)
    and caps workers at one batch at a time or lets them hold several; it checks
    the core's invariants (``Core.validate()``) after every event.
    """

    seed: int = 0
    shuffle: bool = True
    duplicate: float = 0.0
    lose_worker: float = 0.0
    max_losses: int = 20


class LocalBackend:
    """Runs each batch synchronously in this process, one UDF instance per replica."""

    values = ValueOps()

    def __init__(self, plan: Plan, chaos: Chaos | None = None) -> None:
        self.plan = plan
        self.chaos = chaos
        self._instances: dict[Any, Any] = {}
        self._module_of: dict[str, int] = {}
        self._spawned = 0
        self.losses = 0

    def open(self) -> None:
        for module in self.plan.modules:
            for _ in range(module.options.replicas):
                self._spawn(module.id)

    def warm_up(self, timeout_s: float | None = None) -> None:
        """Nothing to wait for: the instances are created by ``open()``."""

    def close(self) -> None:
        self._instances.clear()

    def _spawn(self, module_id: int) -> Any:
        module = self.plan.modules[module_id]
        self._spawned += 1
        worker = f"{module.name}#{self._spawned}"
        self._module_of[worker] = module_id
        self._instances[worker] = instantiate(
            module.udf, module.init_args, dict(module.init_kwargs)
        )
        return worker

    def metrics(self) -> dict[str, Any]:
        return {"backend": "local", "workers_lost": self.losses}

    def drive(self, core: Core) -> Iterator[Delivery]:
        """Run ``core`` to the end, yielding microbatches as they complete."""
        rng = random.Random(self.chaos.seed) if self.chaos else None
        pending: deque[Dispatch] = deque()
        late: list[Event] = []
        workers = [(w, self._module_of[w], self._capacity(rng)) for w in list(self._instances)]
        yield from drive(
            core,
            workers,
            submit=pending.append,
            advance=lambda: self._step(core, pending, late, rng),
            has_work=lambda: bool(pending),
            validate=rng is not None,
        )

    def _capacity(self, rng: random.Random | None) -> int | None:
        return None if rng is None else rng.choice((1, 2, 3))

    def _step(
        self, core: Core, pending: deque[Dispatch], late: list[Event], rng: random.Random | None
    ) -> list[Any]:
        chaos = self.chaos
        if rng is not None and chaos is not None:
            if late and rng.random() < 0.3:
                return self._handle(core, late.pop(rng.randrange(len(late))))
            if chaos.shuffle:
                pending.rotate(-rng.randrange(len(pending)))
            if self.losses < chaos.max_losses and rng.random() < chaos.lose_worker:
                return self._lose(core, pending, late, rng, pending[0].worker)
        command = pending.popleft()
        event = self._execute(command)
        commands = self._handle(core, event)
        if rng is not None and chaos is not None and rng.random() < chaos.duplicate:
            late.append(event)
        return commands

    def _handle(self, core: Core, event: Event) -> list[Any]:
        """Feed ``event`` to the core; under Chaos, check its invariants after it."""
        commands = core.handle(event)
        if self.chaos is not None:
            core.validate()
        return commands

    def _execute(self, command: Dispatch) -> Event:
        module = self.plan.modules[command.node.module]  # type: ignore[index]
        outcome = run_batch(
            self._instances[command.worker],
            command.node.name,
            command.columns,
            command.kwargs,
            module.num_outputs,
        )
        if outcome.rows is not None:
            return BatchFinished(command.batch, outcome.rows, outcome.busy_s)
        if outcome.error is not None:
            return BatchRaised(command.batch, outcome.error, outcome.busy_s, outcome.exception)
        return BatchRejected(command.batch, outcome.rejected or "invalid result", outcome.busy_s)

    def _lose(
        self,
        core: Core,
        pending: deque[Dispatch],
        late: list[Event],
        rng: random.Random,
        worker: Any,
    ) -> list[Any]:
        """Kill ``worker``: its batches are lost, some report late anyway."""
        self.losses += 1
        lost = [c for c in pending if c.worker == worker]
        for command in lost:
            pending.remove(command)
            if rng.random() < 0.5:
                late.append(self._execute(command))
        del self._instances[worker]
        commands = self._handle(core, WorkerLost(worker, "worker killed by chaos"))
        replacement = self._spawn(self._module_of[worker])
        commands += self._handle(
            core, WorkerAdded(replacement, self._module_of[worker], self._capacity(rng))
        )
        return commands
