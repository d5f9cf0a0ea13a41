"""Ablations on this engine: FIFO vs a non-FIFO ready order, ``any_parent`` vs
``single_parent`` batching, and failure containment on vs off (workload 5).

The non-FIFO order needs no engine change: the core takes its ready queues from
an injected factory (``Core(ready_queue=...)``, ``Executor(ready_queue=...)``),
and ``shuffled_queues()`` makes ``ShuffledReadyQueue``s, which take a seeded
random sample of the live ready Grains instead of the oldest ones (the core runs
in the driver, so the actors are unaffected). Containment "off" is the
same poisoned workload whose page model returns ``RecordFailure`` (each page
fails on its own and its siblings still run) instead of ``GroupFailure``.
"""

from __future__ import annotations

import random
from contextlib import contextmanager
from typing import TYPE_CHECKING

from airflow_provider_rayorch.rayorch.runtime.phases import GrainPhase
from airflow_provider_rayorch.rayorch.runtime.queues import ReadyQueue, _Pinned

if TYPE_CHECKING:
    from collections.abc import Iterator

    from airflow_provider_rayorch.rayorch.execution.api import Executor
    from airflow_provider_rayorch.rayorch.runtime.lineage import Grain
    from airflow_provider_rayorch.rayorch.runtime.scheduling import ReadyQueueFactory

__all__ = ["ShuffledReadyQueue", "shuffled_queues", "shuffled_ready_order"]

_READY = GrainPhase.READY


class ShuffledReadyQueue(ReadyQueue):
    """A ready queue that cuts batches from a random sample of the ready Grains.

    Batching is unchanged (same batch size, any parent); only the order is not
    FIFO. Retried or split batches (pinned) and ``single_parent`` keep the base
    behaviour, so the ablation changes one thing.
    """

    __slots__ = ("_rng",)

    def __init__(self, single_parent: bool = False, seed: int = 0) -> None:
        super().__init__(single_parent)
        self._rng = random.Random(seed)

    def take(self, batch_size: int) -> list[Grain]:
        order = self._order
        if self.single_parent or any(isinstance(e, _Pinned) for e in order):
            return super().take(batch_size)
        live = [e for e in order if e[0].phase is _READY and e[0].gen == e[1]]  # type: ignore[index]
        if len(live) <= batch_size:
            order.clear()
            return [g for g, _ in live]  # type: ignore[misc]
        picked = set(self._rng.sample(range(len(live)), batch_size))
        order.clear()
        batch = []
        for i, entry in enumerate(live):
            if i in picked:
                batch.append(entry[0])  # type: ignore[index]
            else:
                order.append(entry)
        return batch


def shuffled_queues(seed: int = 0) -> ReadyQueueFactory:
    """A ready-queue factory for ``Core``/``Executor``: non-FIFO, seeded."""

    def factory(single_parent: bool = False) -> ReadyQueue:
        return ShuffledReadyQueue(single_parent, seed)

    return factory


@contextmanager
def shuffled_ready_order(executor: Executor, seed: int = 0) -> Iterator[None]:
    """Within the block, the runs of ``executor`` use ``ShuffledReadyQueue``s."""
    original = executor.ready_queue
    executor.ready_queue = shuffled_queues(seed)
    try:
        yield
    finally:
        executor.ready_queue = original
