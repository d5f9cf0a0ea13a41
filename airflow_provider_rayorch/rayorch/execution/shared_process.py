"""One actor process for several modules' workers (``ray_options(share_process=)``).

``SharedProcess`` is the actor: it builds one ``PoolWorker`` per slot (a replica of
a member module) and runs each slot's batches one at a time, under the slot's lock;
the process has a thread per batch in flight, so a slot's next batch waits at the
lock, already delivered, as it would queue on a process of its own. ``Slot`` is the
driver's handle on one slot: it has the methods of a ``PoolWorker`` handle (``run``,
``withdraw``, ``running``, ``ready``, ``pid``), so the rest of the Ray backend sees a
worker like any other.

A shared process's death is the death of all its slots; the core then runs every
Grain that was on any of them alone in a whole process (see ``runtime.scheduling``).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

import ray

from .ray_worker import PoolWorker

if TYPE_CHECKING:
    from .protocol import CallSpec, Reply, Running, Task

__all__ = ["SharedProcess", "Slot", "actor_of"]

#: ``udf, args, kwargs, calls``: what a ``PoolWorker`` is built from.
SlotSpec = tuple[type, tuple[Any, ...], dict[str, Any], dict[int, "CallSpec"]]


class SharedProcess:
    """Runs the slots of a shared process; created as a Ray actor by the pools."""

    def __init__(self, slots: dict[str, SlotSpec]) -> None:
        self.slots = {key: PoolWorker(*spec) for key, spec in slots.items()}
        #: One batch at a time per slot, as a process of its own would run them.
        self.locks = {key: threading.Lock() for key in slots}

    def ready(self, slot: str) -> tuple[int, str]:
        return self.slots[slot].ready()

    def pid(self, slot: str | None = None) -> int:
        return os.getpid()

    @ray.method(num_returns=2)
    def run(self, slot: str, task: Task, *inputs: Any) -> tuple[Reply, Any]:
        with self.locks[slot]:
            return self.slots[slot].run_task(task, inputs)

    @ray.method(concurrency_group="control")
    def withdraw(self, slot: str, epoch: int, batch: int, rows: list[int]) -> bool:
        return self.slots[slot].mark_withdrawn(epoch, batch, rows)

    @ray.method(concurrency_group="control")
    def running(self, slot: str) -> Running | None:
        return self.slots[slot].now_running()


class _SlotMethod:
    __slots__ = ("method", "slot")

    def __init__(self, method: Any, slot: str) -> None:
        self.method = method
        self.slot = slot

    def remote(self, *args: Any) -> Any:
        return self.method.remote(self.slot, *args)


class Slot:
    """The driver's handle on one slot of a shared process."""

    def __init__(self, process: Any, slot: str) -> None:
        #: The ``SharedProcess`` actor handle (what ``ray.kill`` sees).
        self.process = process
        self.slot = slot
        for name in ("run", "withdraw", "running", "ready", "pid"):
            setattr(self, name, _SlotMethod(getattr(process, name), slot))


def actor_of(handle: Any) -> Any:
    """The Ray actor behind a worker handle (a slot's process, or the handle)."""
    return handle.process if type(handle) is Slot else handle
