"""Scheduling and dispatch: workers, in-flight batches and which Grains go where.

The scheduler picks a free worker of a pool and cuts the next batch from the
ready queue of the pool's Call whose oldest Grain waited longest; it also
books batch reports (fencing stale and duplicate ones) and worker arrivals
and losses. Ready queues are built by the injected ``ReadyQueueFactory``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import InvalidTransition, UsageError
from .events import Command, Dispatch, WorkerAdded, WorkerLost
from .state import BatchRecord, HostState, WorkerState

if TYPE_CHECKING:
    from .lineage import Grain
    from .metrics import Timeline
    from .queues import ReadyQueue
    from .state import CallState, PoolState
    from .transitions import Transitions

__all__ = ["ReadyQueueFactory", "Scheduler"]

#: Makes a Call's ready queue; the argument says whether it batches ``single_parent``.
ReadyQueueFactory = Callable[[bool], "ReadyQueue"]


class Scheduler:
    __slots__ = (
        "batch_ids",
        "batches",
        "duplicate_reports",
        "hosts",
        "lost_batches",
        "now",
        "out",
        "pools",
        "stale_reports",
        "timeline",
        "transitions",
        "workers",
    )

    def __init__(
        self,
        pools: list[PoolState],
        batches: dict[int, BatchRecord],
        transitions: Transitions,
        timeline: Timeline,
        out: list[Command],
    ) -> None:
        self.pools = pools
        #: batch id -> batch, for every batch dispatched and not yet reported.
        self.batches = batches
        self.transitions = transitions
        self.timeline = timeline
        self.out = out
        self.workers: dict[Any, WorkerState] = {}
        #: Shared processes by the id their workers were added with.
        self.hosts: dict[Any, HostState] = {}
        self.lost_batches: set[int] = set()
        self.batch_ids = 0
        self.stale_reports = 0
        self.duplicate_reports = 0
        self.now = 0.0

    # -- dispatch ------------------------------------------------------------------------
    def pump_all(self) -> None:
        for pool in self.pools:
            if pool.ready and pool.workers:
                self.pump(pool)

    def pump(self, pool: PoolState) -> None:
        """Send ``pool``'s ready Grains to its free workers, least loaded first."""
        workers = list(pool.workers.values())
        calls = pool.calls
        if self.hosts and any(c.ready and _lost_before(c.queue.head()) for c in calls):
            # A Grain that was on a dead worker runs alone in a whole process: a shared
            # one that is busy takes nothing new until it is idle (it drains).
            for w in workers:
                if w.host.shared and w.host.busy:
                    w.host.draining = True
        while pool.ready:
            worker = None
            for w in workers:
                host = w.host
                if (
                    not host.quarantined
                    and not (host.draining and host.busy)
                    and len(w.inflight) < w.capacity
                    and (worker is None or len(w.inflight) < len(worker.inflight))
                ):
                    worker = w
            if worker is None:
                return
            if worker.inflight:
                # A busy worker is only sent full batches: partial ones wait for an idle
                # one, and so do Grains that were on a worker that died (they run alone,
                # so a death they cause again is charged to them, never to a neighbour).
                candidates = [
                    c for c in calls if c.ready >= c.batch_size and not _lost_before(c.queue.head())
                ]
            elif worker.host.busy:
                # Its process runs other workers' batches; it is draining when a Grain
                # that was on a dead worker waits, so this one may have anything.
                candidates = [c for c in calls if c.ready]
            elif worker.host.draining and _suspect_waits(worker.host):
                # Drained for such a Grain: it goes first, whichever pool it is in.
                candidates = [c for c in calls if c.ready and _lost_before(c.queue.head())]
            else:
                worker.host.draining = False
                candidates = [c for c in calls if c.ready]
            if not candidates:
                return
            call = (
                candidates[0]
                if len(candidates) == 1
                else min(candidates, key=lambda c: c.queue.head_seq() or 0)
            )
            grains = call.queue.take(call.batch_size)
            if not grains:  # only dead entries were left: the counters say otherwise
                raise InvalidTransition(
                    f"ready queue of Call {call.name}",
                    f"{call.ready} ready",
                    "take",
                    ["queue held no live Grain"],
                )
            self._dispatch(call, worker, grains)

    def _dispatch(self, call: CallState, worker: WorkerState, grains: list[Grain]) -> None:
        self.transitions.dispatch(call, grains)
        self.batch_ids += 1
        batch_id = self.batch_ids
        batch = BatchRecord(batch_id, call, worker, grains)
        self.timeline.dispatch(self.now, batch)
        self.batches[batch_id] = batch
        worker.inflight[batch_id] = batch
        host = worker.host
        host.busy += 1
        if batch.suspect:
            host.quarantined += 1
            host.draining = False
        columns = [[g.entity.items[slot] for g in grains] for slot in call.in_slots]
        self.out.append(Dispatch(batch_id, worker.id, call.node, columns, call.kwargs))

    # -- reports -------------------------------------------------------------------------
    def take(self, batch_id: int, busy_s: float, kind: str) -> BatchRecord | None:
        """The in-flight batch a report is about, or None for a stale (lost batch) or
        duplicate report, which are counted and otherwise ignored."""
        batch = self.batches.pop(batch_id, None)
        if batch is None:
            if batch_id in self.lost_batches:
                self.stale_reports += 1
            else:
                self.duplicate_reports += 1
            return None
        batch.worker.inflight.pop(batch_id, None)
        host = batch.worker.host
        host.busy -= 1
        if batch.suspect:
            host.quarantined -= 1
        batch.call.busy_s += busy_s
        self.timeline.report(self.now, batch, busy_s, kind)
        return batch

    # -- workers -------------------------------------------------------------------------
    def add_worker(self, event: WorkerAdded) -> None:
        if event.worker in self.workers:
            raise UsageError(
                f"WorkerAdded: worker {event.worker!r} is already registered; give each worker "
                "its own id (a WorkerLost first frees one)"
            )
        pool = self.pools[event.module]
        capacity = pool.capacity if event.capacity is None else event.capacity
        if capacity < 1:
            raise UsageError(
                f"WorkerAdded: worker {event.worker!r} has capacity {capacity}; give 1 or more "
                "(batches it may hold at once)"
            )
        if event.host is None:
            host = HostState()
        else:
            host = self.hosts.setdefault(event.host, HostState(shared=True))
        worker = WorkerState(event.worker, pool, capacity, host)
        host.workers.append(worker)
        pool.workers[event.worker] = worker
        self.workers[event.worker] = worker

    def remove_worker(self, event: WorkerLost) -> list[tuple[BatchRecord, bool]]:
        """Forget a lost worker, and with one that shares a process every worker of
        that process (they died with it); returns their batches, newest first, each
        with whether it is charged an infra retry.

        A worker runs its batches in dispatch order: the oldest was running and is
        charged, the others were waiting and are not (none is when the backend
        killed the worker on purpose, ``charge=False``). Newest first, so that
        re-queuing each at the front leaves them in their FIFO order.
        """
        worker = self.workers.get(event.worker)
        if worker is None:
            return []
        host = worker.host
        lost: list[tuple[BatchRecord, bool]] = []
        for w in list(host.workers) if host.shared else [worker]:
            lost += self._forget(w, event.charge, event.node)
        if host.shared:
            self.hosts = {k: h for k, h in self.hosts.items() if h is not host}
        return lost

    def _forget(
        self, worker: WorkerState, charge: bool, node: str | None = None
    ) -> list[tuple[BatchRecord, bool]]:
        del self.workers[worker.id]
        del worker.pool.workers[worker.id]
        host = worker.host
        host.workers.remove(worker)
        order = sorted(worker.inflight)
        charged = order[0] if order and charge else None
        lost = []
        for batch_id in reversed(order):
            batch = worker.inflight[batch_id]
            self.timeline.report(self.now, batch, 0.0, "lost", node)
            del self.batches[batch_id]
            self.lost_batches.add(batch_id)
            lost.append((batch, batch_id == charged))
            host.busy -= 1
            if batch.suspect:
                host.quarantined -= 1
        worker.inflight.clear()
        return lost


def _suspect_waits(host: HostState) -> bool:
    """A pool with a worker in ``host`` has a Grain that was on a dead worker ready."""
    return any(c.ready and _lost_before(c.queue.head()) for w in host.workers for c in w.pool.calls)


def _lost_before(grain: Grain | None) -> bool:
    """``grain`` was in flight on a worker that died."""
    return grain is not None and grain.lost > 0
