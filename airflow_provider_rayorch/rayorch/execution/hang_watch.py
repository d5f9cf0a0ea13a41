"""Batch clocks for ``ray_options(batch_timeout_s=...)``: which batch hangs, cheaply.

A batch cannot have run longer than the time since it was dispatched, so a
worker needs no look before its oldest batch could have timed out. Then the
driver asks the actor (``running()``, on the actor's control thread, so it
answers while a batch runs) which batch runs and since when; the clock of a
batch starts when its ``run()`` starts on the worker. A batch past its timeout
is hung; so is the oldest batch of an actor that does not answer the question
within the timeout. Nothing here blocks or talks to Ray: the backend sends the
probes and reports their answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Collection

    from .protocol import Running

__all__ = ["HangWatch", "Verdict"]

#: The shortest wait before looking at a worker again.
_MIN_WAIT_S = 0.05


@dataclass(slots=True)
class _Clock:
    timeout_s: float
    due: float
    #: When the outstanding probe was sent (None: no probe out).
    asked_at: float | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """The answer to a probe: ``hung`` is the batch id past its timeout, if any (0:
    a recomputation of lost values); ``elapsed_s`` how long it had run."""

    worker: Any
    hung: int | None = None
    elapsed_s: float = 0.0


class HangWatch:
    """When to probe which worker, and what a probe's answer means."""

    def __init__(self) -> None:
        self._clocks: dict[Any, _Clock] = {}

    def dispatched(self, worker: Any, timeout_s: float | None, now: float) -> None:
        """A batch went to ``worker``: watch it if its module has a timeout."""
        if timeout_s is not None and worker not in self._clocks:
            self._clocks[worker] = _Clock(timeout_s, now + timeout_s)

    def forget(self, worker: Any) -> None:
        self._clocks.pop(worker, None)

    def next_due(self) -> float:
        """When the backend should call ``due`` next (``inf``: nothing watched)."""
        return (
            min(
                (c.due if c.asked_at is None else c.asked_at + c.timeout_s)
                for c in self._clocks.values()
            )
            if self._clocks
            else float("inf")
        )

    def due(self, now: float) -> tuple[list[Any], list[Any]]:
        """``(workers to probe now, workers that left a probe unanswered for their
        whole timeout)``. The caller sends each probe and reports it with ``asked``."""
        probe, silent = [], []
        for worker, clock in self._clocks.items():
            if clock.asked_at is None:
                if clock.due <= now:
                    probe.append(worker)
            elif now - clock.asked_at >= clock.timeout_s:
                silent.append(worker)
        return probe, silent

    def asked(self, worker: Any, now: float) -> None:
        clock = self._clocks.get(worker)
        if clock is not None:
            clock.asked_at = now

    def answered(
        self,
        worker: Any,
        running: Running | None,
        epoch: int,
        inflight: Collection[int],
        now: float,
    ) -> Verdict:
        """Judge a probe's answer; ``inflight`` are the worker's batch ids of run
        ``epoch``. Sets the worker's next look (or stops watching an idle worker)."""
        clock = self._clocks.get(worker)
        if clock is None:
            return Verdict(worker)
        clock.asked_at = None
        if running is not None and running.epoch == epoch and running.batch in inflight:
            if running.elapsed_s >= clock.timeout_s:
                return Verdict(worker, running.batch, running.elapsed_s)
            clock.due = now + max(_MIN_WAIT_S, clock.timeout_s - running.elapsed_s)
        elif running is not None and running.batch == 0:  # a recomputation of lost values
            if running.elapsed_s >= clock.timeout_s:
                return Verdict(worker, 0, running.elapsed_s)
            clock.due = now + max(_MIN_WAIT_S, clock.timeout_s - running.elapsed_s)
        elif running is not None or inflight:  # a moot batch, or between batches
            clock.due = now + clock.timeout_s
        else:
            del self._clocks[worker]
        return Verdict(worker)
