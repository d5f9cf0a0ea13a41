"""The lineage core: one state machine for a whole run, driven by events.

``Core.start()`` admits the first source microbatches; ``Core.handle(event)``
applies one executor event and returns the commands it implies. Structural
nodes (expand, reduce, filter, broadcast) are evaluated inside the core the
moment their inputs have outcomes; Calls become Grains in their Call's ready
queue and leave it as ``Dispatch`` commands for free workers.

The parts, each in its module: ``lowering`` (the plan as slot facts, once per
plan), ``wiring`` (a run's state and handlers), ``admission`` (microbatches in
and out), ``scheduling`` (workers, batches, dispatch), ``transitions`` (Grain
phase changes and their counters), ``recovery`` (what a failed batch's Grains
do next), ``metrics`` and ``validation`` (the invariants).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..errors import ExecutionError, UsageError
from .admission import Admission, check_columns, check_limits, layout
from .events import (
    Abort,
    BatchFinished,
    BatchRaised,
    BatchRejected,
    Command,
    Event,
    WorkerAdded,
    WorkerLost,
)
from .items import settle, settle_all
from .lineage import ValueOps
from .lowering import lower
from .metrics import Timeline, call_metrics
from .queues import ReadyQueue
from .recovery import decide_after_exception, decide_after_loss
from .scheduling import Scheduler
from .state import CallState, DomainState, Microbatch
from .transitions import Transitions, live_grains
from .validation import validate
from .wiring import wire

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

    from ..program.plan import Plan
    from .scheduling import ReadyQueueFactory
    from .state import BatchRecord, PoolState, WorkerState

__all__ = ["CallState", "Core", "DomainState", "Microbatch"]


class Core:
    """The lineage state machine of one run.

    ``ready_queue(single_parent)`` makes each Call's ready queue (default: the
    FIFO ``ReadyQueue``); ablations inject another order here.
    """

    def __init__(
        self,
        plan: Plan,
        columns: Sequence[Sequence[Any]],
        *,
        input_batch_size: int | None = None,
        max_active_input_batches: int = 1,
        skip_microbatches: Collection[int] = (),
        values: ValueOps | None = None,
        clock: Callable[[], float] = time.perf_counter,
        ready_queue: ReadyQueueFactory | None = None,
    ) -> None:
        self.plan = plan
        checked = check_columns(plan, columns)
        check_limits(input_batch_size, max_active_input_batches)
        n = len(checked[0]) if checked else 0
        size = input_batch_size or max(n, 1)
        self.num_sources = n
        self.input_batch_size = size
        self.max_active = max_active_input_batches
        self.values = values or ValueOps()
        self._clock = clock
        self._now = clock()
        self._out: list[Command] = []
        self.aborted: ExecutionError | None = None
        lowered = lower(plan)
        batches: dict[int, BatchRecord] = {}
        self._transitions = Transitions(batches, self._out)
        run = wire(plan, lowered, self.values, ready_queue or ReadyQueue, self._transitions)
        self.domains = run.domains
        self.calls: list[CallState] = run.calls
        self._timeline = Timeline()
        self._scheduler = Scheduler(
            run.pools, batches, self._transitions, self._timeline, self._out
        )
        self._admission = Admission(
            checked,
            layout(n, size, skip_microbatches),
            max_active_input_batches,
            run.domains[0],
            lowered.source_slots,
            lowered.output_slots,
            self._out,
        )
        self.active: list[Microbatch] = self._admission.active
        #: ("dispatch", ...) and ("report", ...) records, see ``metrics.Timeline``.
        self.timeline = self._timeline.records

    # -- public driving API -------------------------------------------------------------
    def start(self) -> list[Command]:
        """Admit the first microbatches; returns the commands that follow."""
        self._begin()
        self._admission.admit_more(self._now)
        return self._end()

    def handle(self, event: Event) -> list[Command]:
        """Apply one executor event; returns the commands that follow from it."""
        self._begin()
        kind = type(event)
        if kind is BatchFinished:
            self._on_finished(event)  # type: ignore[arg-type]
        elif kind is BatchRaised:
            self._on_raised(event)  # type: ignore[arg-type]
        elif kind is BatchRejected:
            self._on_rejected(event)  # type: ignore[arg-type]
        elif kind is WorkerAdded:
            self._scheduler.add_worker(event)  # type: ignore[arg-type]
        elif kind is WorkerLost:
            self._on_worker_lost(event)  # type: ignore[arg-type]
        else:
            raise UsageError(
                f"Core.handle got {event!r}, which is not a core event: pass a WorkerAdded, "
                "WorkerLost, BatchFinished, BatchRaised or BatchRejected"
            )
        return self._end()

    def validate(self) -> None:
        """Check the core's invariants; raises ``BrokenInvariant`` naming the broken one."""
        validate(self)

    # -- queries ------------------------------------------------------------------------
    @property
    def in_flight(self) -> int:
        """Batches dispatched and not yet reported."""
        return len(self._scheduler.batches)

    def ready_grains(self) -> int:
        return sum(c.ready for c in self.calls)

    def workers_of(self, module: int) -> list[Any]:
        return list(self._scheduler.pools[module].workers)

    def batches_on(self, worker: Any) -> list[int]:
        w = self._scheduler.workers.get(worker)
        return [] if w is None else list(w.inflight)

    @property
    def finished(self) -> bool:
        """RunFinished was emitted."""
        return self._admission.finished

    @property
    def microbatches_done(self) -> int:
        """Microbatches finished so far; the core keeps none of them (each leaves with
        its ``MicrobatchDone`` command)."""
        return self._admission.microbatches_done

    @property
    def sources_done(self) -> int:
        """Sources of the microbatches finished so far."""
        return self._admission.sources_done

    @property
    def grains_dispatched(self) -> int:
        """Grains dispatched so far over every Call: one int the dispatching thread
        rebinds, safe to read from another thread (nothing is iterated)."""
        return self._transitions.dispatched

    @property
    def stale_reports(self) -> int:
        """Reports of batches lost with their worker (fenced, ignored)."""
        return self._scheduler.stale_reports

    @property
    def duplicate_reports(self) -> int:
        """Second reports of a batch, or of one never dispatched (ignored)."""
        return self._scheduler.duplicate_reports

    def call_metrics(self) -> list[dict[str, Any]]:
        return [call_metrics(c) for c in self.calls]

    # Read-only views of the parts, for validation and tests.
    @property
    def _batches(self) -> dict[int, BatchRecord]:
        return self._scheduler.batches

    @property
    def _pools(self) -> list[PoolState]:
        return self._scheduler.pools

    @property
    def _workers(self) -> dict[Any, WorkerState]:
        return self._scheduler.workers

    _settle = staticmethod(settle)
    _settle_all = staticmethod(settle_all)

    # -- one event ----------------------------------------------------------------------
    def _begin(self) -> None:
        now = self._now = self._clock()
        self._transitions.now = self._scheduler.now = now
        self._out.clear()
        self._admission.just_done.clear()

    def _end(self) -> list[Command]:
        if self.aborted is None:
            scheduler, admission, now = self._scheduler, self._admission, self._now
            scheduler.pump_all()
            while admission.complete_finished(now):
                scheduler.pump_all()
        commands = self._out[:]
        self._out.clear()
        return commands

    def _on_finished(self, event: BatchFinished) -> None:
        batch = self._scheduler.take(event.batch, event.busy_s, "finished")
        if batch is None:
            return
        if len(event.rows) != len(batch.grains):
            reason = f"the batch result has {len(event.rows)} rows for {len(batch.grains)} inputs"
            self._transitions.reject(batch, reason)
            return
        self._transitions.commit_rows(batch, event.rows)

    def _on_rejected(self, event: BatchRejected) -> None:
        batch = self._scheduler.take(event.batch, event.busy_s, "rejected")
        if batch is not None:
            self._transitions.reject(batch, event.reason)

    def _on_raised(self, event: BatchRaised) -> None:
        batch = self._scheduler.take(event.batch, event.busy_s, "raised")
        if batch is None:
            return
        call = batch.call
        grains = [g for _, g in live_grains(batch)]
        # alone: judged by the rows run() was given, not by those still live
        decision = decide_after_exception(call.recovery, grains, alone=len(batch.grains) == 1)
        if decision.abort:
            self.aborted = ExecutionError(
                f"Call {call.name!r} raised and its recovery policy is abort(): {event.error}"
            )
            self.aborted.__cause__ = event.exception
            self._out.append(Abort(self.aborted))
            return
        self._transitions.retry(call, decision, event.error)

    def _on_worker_lost(self, event: WorkerLost) -> None:
        for batch, charged in self._scheduler.remove_worker(event):
            call = batch.call
            grains = [g for _, g in live_grains(batch)]
            if event.charge:  # a death nobody chose: which batch caused it is a guess
                for grain in grains:
                    grain.lost += 1
            # killed on purpose (not event.charge): each batch left on it runs again
            # as the batch it was, never merged with others
            decision = decide_after_loss(
                call.recovery, grains, charged=charged, keep_batch=not event.charge
            )
            limit = call.recovery.infra_retries
            self._transitions.retry(
                call, decision, f"{event.reason} (infra_retries={limit} exhausted)"
            )
