"""The lineage core: one state machine for a whole run, driven by events.

``Core.start()`` admits the first source microbatches; ``Core.handle(event)``
applies one executor event and returns the commands it implies. Structural
nodes (expand, reduce, filter, broadcast) are evaluated inside the core the
moment their inputs have outcomes; Calls become Grains in their Call's FIFO
ready queue and leave it as ``Dispatch`` commands for free workers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from typing import Any

from ..errors import ExecutionError, InvalidTransition
from ..outcomes import GroupFailure, ItemOutcome, OutputIssue, RecordFailure
from ..program.options import Batching
from ..program.plan import Node, NodeKind, Plan
from ..summary import microbatch_summary
from .events import (
    Abort,
    BatchFinished,
    BatchRaised,
    BatchRejected,
    Command,
    Dispatch,
    Event,
    MicrobatchDone,
    RunFinished,
    Withdraw,
    Withdrawn,
    WorkerAdded,
    WorkerLost,
)
from .lineage import PENDING, Cause, Entity, Grain, Issue, ValueOps
from .phases import GrainEvent, GrainPhase, move
from .queues import ReadyQueue
from .recovery import Decision, decide_after_exception, decide_after_loss

__all__ = ["CallState", "Core", "DomainState", "Microbatch"]

_READY, _IN_FLIGHT = GrainPhase.READY, GrainPhase.IN_FLIGHT
#: At most this many timeline records are kept per run.
TIMELINE_CAP = 200_000
_DROPPED, _FAILED, _SUPPRESSED = ItemOutcome.DROPPED, ItemOutcome.FAILED, ItemOutcome.SUPPRESSED
_Handler = Callable[[Entity], None]


class DomainState:
    __slots__ = (
        "broadcasts_in",
        "consumers",
        "depth",
        "expand",
        "id",
        "n_slots",
        "name",
        "reduces",
    )

    def __init__(self, id: int, name: str, n_slots: int, depth: int, expand: int | None) -> None:
        self.id = id
        self.name = name
        self.n_slots = n_slots
        self.depth = depth
        self.expand = expand
        #: slot -> handlers to call when that Item gets an outcome.
        self.consumers: list[list[_Handler]] = [[] for _ in range(n_slots)]
        #: reduce nodes gathering this Domain's Entities back to their parents.
        self.reduces: list[_Reduce] = []
        #: broadcasts writing into this Domain.
        self.broadcasts_in: list[_Broadcast] = []


class CallState:
    """A Call's queue, options and metrics."""

    __slots__ = (
        "batch_hist",
        "batch_size",
        "busy_s",
        "dispatched",
        "failed",
        "id",
        "in_slots",
        "kwargs",
        "n_out",
        "name",
        "node",
        "out_slots",
        "pool",
        "queue",
        "queue_wait_s",
        "ready",
        "recovery",
        "retries",
        "rpcs",
        "suppressed",
        "withdrawn",
    )

    def __init__(self, node: Node, core: Core) -> None:
        plan = core.plan
        module = plan.modules[node.module]  # type: ignore[index]
        self.node = node
        self.id = node.id
        self.name = node.name
        self.in_slots = [plan.ports[p].slot for p in node.inputs]
        self.out_slots = [plan.ports[p].slot for p in node.outputs]
        self.n_out = len(node.outputs)
        self.kwargs = dict(node.kwargs)
        self.batch_size = module.options.batch_size
        self.recovery = module.options.recovery
        self.queue = ReadyQueue(module.options.batching is Batching.SINGLE_PARENT)
        self.pool: _Pool = core._pools[module.id]
        self.ready = 0
        self.rpcs = self.dispatched = self.retries = self.suppressed = self.failed = 0
        #: Rows of in-flight batches a sibling's GroupFailure made moot.
        self.withdrawn = 0
        self.busy_s = self.queue_wait_s = 0.0
        self.batch_hist: dict[int, int] = {}

    def metrics(self) -> dict[str, Any]:
        sizes = sum(k * v for k, v in self.batch_hist.items())
        return {
            "name": self.name,
            "replicas": self.pool.replicas,
            "rpcs": self.rpcs,
            "grains_dispatched": self.dispatched,
            "retries": self.retries,
            "suppressed": self.suppressed,
            "withdrawn": self.withdrawn,
            "failed": self.failed,
            "batch_size": self.batch_size,
            "batch_sizes": {str(k): v for k, v in sorted(self.batch_hist.items())},
            "mean_batch": sizes / self.rpcs if self.rpcs else 0.0,
            "busy_s": round(self.busy_s, 6),
            "queue_wait_s": round(self.queue_wait_s, 6),
        }


class _Pool:
    __slots__ = ("calls", "capacity", "module", "ready", "replicas", "workers")

    def __init__(self, module: int, replicas: int, capacity: int) -> None:
        self.module = module
        self.replicas = replicas
        self.capacity = capacity
        self.calls: list[CallState] = []
        self.workers: dict[Any, _Worker] = {}
        self.ready = 0


class _Worker:
    __slots__ = ("capacity", "id", "inflight", "pool")

    def __init__(self, id: Any, pool: _Pool, capacity: int) -> None:
        self.id = id
        self.pool = pool
        self.capacity = capacity
        self.inflight: dict[int, _Batch] = {}


class _Batch:
    __slots__ = ("call", "gens", "grains", "id", "worker")

    def __init__(self, id: int, call: CallState, worker: _Worker, grains: list[Grain]) -> None:
        self.id = id
        self.call = call
        self.worker = worker
        self.grains = grains
        self.gens = [g.gen for g in grains]


class Microbatch:
    """One admitted slice of the sources, and what became of it."""

    def __init__(self, index: int, first_source: int, count: int, now: float) -> None:
        self.index = index
        self.first_source = first_source
        self.count = count
        self.roots: list[Entity] = []
        self.outstanding = 0
        self.entity_counts: dict[str, int] = {}
        self.dispatched = self.retried = self.suppressed = 0
        self.started = now
        self.finished: float | None = None
        #: Per output Port: one entry per source, a value or an ``OutputIssue``.
        self.outputs: list[list[Any]] = []
        self.source_outcomes: list[ItemOutcome] = []
        self.failures: list[dict[str, Any]] = []

    @property
    def elapsed_s(self) -> float:
        return (self.finished or self.started) - self.started

    def outcome_counts(self) -> dict[str, int]:
        counts = {o.value: 0 for o in ItemOutcome}
        for outcome in self.source_outcomes:
            counts[outcome.value] += 1
        return counts

    def lineage(self, max_failed_ratio: float = 0.0, **identity: Any) -> dict[str, Any]:
        """The microbatch's lineage summary (API.md section 3)."""
        return microbatch_summary(
            index=self.index,
            first_source=self.first_source,
            count=self.count,
            outcome_counts=self.outcome_counts(),
            entities=self.entity_counts,
            grains={
                "dispatched": self.dispatched,
                "retried": self.retried,
                "suppressed": self.suppressed,
            },
            failures=self.failures,
            elapsed_s=self.elapsed_s,
            max_failed_ratio=max_failed_ratio,
            **identity,
        )


class Core:
    """The lineage state machine of one run."""

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
    ) -> None:
        self.plan = plan
        self._columns = _check_columns(plan, columns)
        n = len(self._columns[0]) if self._columns else 0
        if input_batch_size is not None and (
            not isinstance(input_batch_size, int)
            or isinstance(input_batch_size, bool)
            or input_batch_size < 1
        ):
            raise ValueError(
                f"input_batch_size must be an int >= 1 or None, got {input_batch_size!r}"
            )
        if not isinstance(max_active_input_batches, int) or max_active_input_batches < 1:
            raise ValueError(
                f"max_active_input_batches must be an int >= 1, got {max_active_input_batches!r}"
            )
        size = input_batch_size or max(n, 1)
        self.num_sources = n
        self.input_batch_size = size
        self.max_active = max_active_input_batches
        self._layout = [
            (i, first, min(size, n - first))
            for i, first in enumerate(range(0, n, size))
            if i not in set(skip_microbatches)
        ]
        self._layout.reverse()  # pop() admits in index order
        self.values = values or ValueOps()
        self._clock = clock
        self._now = clock()
        self._out: list[Command] = []
        self._seq = 0
        self._batch_ids = 0
        self._batches: dict[int, _Batch] = {}
        self._lost_batches: set[int] = set()
        self.stale_reports = 0
        self.duplicate_reports = 0
        self.aborted: ExecutionError | None = None
        self.finished = False
        self.active: list[Microbatch] = []
        self.done: list[Microbatch] = []
        #: ("dispatch", t, call, worker, batch, size, queue depth after) and
        #: ("report", t, call, worker, batch, busy_s, kind) records, for run reports.
        self.timeline: list[tuple[Any, ...]] = []
        self._build()

    # -- construction ---------------------------------------------------------
    def _build(self) -> None:
        plan = self.plan
        self.domains = [
            DomainState(d.id, d.name, len(d.ports), d.depth, d.expand) for d in plan.domains
        ]
        self._pools = [
            _Pool(m.id, m.options.replicas, m.options.max_batches_in_flight) for m in plan.modules
        ]
        self.calls: list[CallState] = []
        self._workers: dict[Any, _Worker] = {}
        for node in plan.nodes:
            handler: _Handler | None = None
            if node.kind is NodeKind.CALL:
                call = CallState(node, self)
                call.pool.calls.append(call)
                self.calls.append(call)
                handler = self._node_handler(node, self._call_fn(call))
            elif node.kind is NodeKind.FILTER:
                handler = self._node_handler(node, self._filter_fn(node))
            elif node.kind is NodeKind.EXPAND:
                handler = self._node_handler(node, self._expand_fn(node))
            elif node.kind is NodeKind.REDUCE:
                reduce = _Reduce(node, self)
                self.domains[node.child_domain].reduces.append(reduce)  # type: ignore[index]
                for slot in reduce.watch_slots:
                    self.domains[node.child_domain].consumers[slot].append(reduce.on_child)  # type: ignore[index]
            elif node.kind is NodeKind.BROADCAST:
                bcast = _Broadcast(node, self)
                self.domains[node.domain].broadcasts_in.append(bcast)
                self.domains[bcast.src_domain].consumers[bcast.src_slot].append(bcast.on_ancestor)
            if handler is not None:
                slots = {plan.ports[p].slot for p in node.inputs}
                for slot in slots:
                    self.domains[node.domain].consumers[slot].append(handler)
        self._source_slots = [plan.ports[p].slot for p in plan.sources]
        self._output_slots = [plan.ports[p].slot for p in plan.outputs]

    def _call_fn(self, call: CallState) -> _Handler:
        def fire(e: Entity) -> None:
            self._fire_call(call, e)

        return fire

    def _node_handler(self, node: Node, fire: _Handler) -> _Handler:
        """Fire ``node`` once per Entity, when its last distinct input has an outcome."""
        distinct = len(set(node.inputs))
        if distinct == 1:
            return fire
        nid = node.id

        def on_input(e: Entity) -> None:
            waits = e.waits
            if waits is None:
                waits = e.waits = {}
            left = waits.get(nid, distinct) - 1
            if left:
                waits[nid] = left
                return
            del waits[nid]
            fire(e)

        return on_input

    # -- public driving API -----------------------------------------------------
    def start(self) -> list[Command]:
        """Admit the first microbatches; returns the commands that follows."""
        self._begin()
        self._admit_more()
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
            self._on_worker_added(event)  # type: ignore[arg-type]
        elif kind is WorkerLost:
            self._on_worker_lost(event)  # type: ignore[arg-type]
        else:
            raise TypeError(f"not a core event: {event!r}")
        return self._end()

    @property
    def in_flight(self) -> int:
        """Batches dispatched and not yet reported."""
        return len(self._batches)

    def ready_grains(self) -> int:
        return sum(c.ready for c in self.calls)

    def workers_of(self, module: int) -> list[Any]:
        return list(self._pools[module].workers)

    def batches_on(self, worker: Any) -> list[int]:
        w = self._workers.get(worker)
        return [] if w is None else list(w.inflight)

    def _begin(self) -> None:
        self._now = self._clock()
        self._out = []

    def _end(self) -> list[Command]:
        if self.aborted is None:
            for pool in self._pools:
                if pool.ready and pool.workers:
                    self._pump(pool)
            self._finish_ready_microbatches()
        return self._out

    # -- admission and completion ----------------------------------------------
    def _admit_more(self) -> None:
        while self._layout and len(self.active) < self.max_active:
            index, first, count = self._layout.pop()
            mb = Microbatch(index, first, count, self._now)
            self.active.append(mb)
            root = self.domains[0]
            mb.entity_counts[root.name] = count
            mb.outstanding = count * root.n_slots
            mb.roots = [Entity(root, None, first + i, mb, first + i) for i in range(count)]
            cols = self._columns
            for i, entity in enumerate(mb.roots):
                for k, slot in enumerate(self._source_slots):
                    self._settle(entity, slot, cols[k][first + i])
        if not self.active and not self._layout and not self.finished:
            self.finished = True
            self._out.append(RunFinished())

    def _finish_ready_microbatches(self) -> None:
        while True:
            finished = [mb for mb in self.active if mb.outstanding == 0]
            if not finished:
                return
            for mb in finished:
                self.active.remove(mb)
                self._close(mb)
                self.done.append(mb)
                self._out.append(MicrobatchDone(mb))
            self._admit_more()
            for pool in self._pools:
                if pool.ready and pool.workers:
                    self._pump(pool)

    def _close(self, mb: Microbatch) -> None:
        mb.finished = self._now
        outputs: list[list[Any]] = [[] for _ in self._output_slots]
        outcomes = []
        failures = []
        for entity in mb.roots:
            worst: tuple[int, OutputIssue] | None = None
            for k, slot in enumerate(self._output_slots):
                content = entity.items[slot]
                if type(content) is Issue:
                    issue = _output_issue(content, entity)
                    outputs[k].append(issue)
                    rank = _RANK[issue.outcome]
                    if worst is None or rank > worst[0]:
                        worst = (rank, issue)
                else:
                    outputs[k].append(content)
            if worst is None:
                outcomes.append(ItemOutcome.PRESENT)
            else:
                issue = worst[1]
                outcomes.append(issue.outcome)
                if issue.outcome is not _DROPPED:
                    failures.append(
                        {
                            "source": entity.source,
                            "outcome": issue.outcome.value,
                            "cause": issue.cause,
                        }
                    )
        mb.outputs = outputs
        mb.source_outcomes = outcomes
        mb.failures = failures
        _release(mb.roots)
        mb.roots = []

    # -- Items ----------------------------------------------------------------
    def _settle(self, e: Entity, slot: int, content: Any) -> None:
        """Give Item ``slot`` of ``e`` its outcome, then fire what waited on it."""
        items = e.items
        if items[slot] is not PENDING:
            port = self.plan.domains[e.domain.id].ports[slot]
            raise InvalidTransition(
                f"Item {self.plan.ports[port].label} of {e.path()}",
                "settled",
                "settle",
                [f"held {items[slot]!r}", f"offered {content!r}"],
            )
        items[slot] = content
        e.mb.outstanding -= 1
        for handler in e.domain.consumers[slot]:
            handler(e)

    def _settle_all(self, e: Entity, slots: list[int], content: Any) -> None:
        for slot in slots:
            self._settle(e, slot, content)

    # -- structural nodes -------------------------------------------------------
    def _filter_fn(self, node: Node) -> _Handler:
        slots = [self.plan.ports[p].slot for p in node.inputs]
        value_slot, mask_slot = slots
        out = self.plan.ports[node.outputs[0]].slot
        truth = self.values.truth

        def fire(e: Entity) -> None:
            items = e.items
            issue = _first_issue(items, slots)
            if issue is not None:
                self._settle(e, out, issue.propagated())
            elif truth(items[mask_slot]):
                self._settle(e, out, items[value_slot])
            else:
                self._settle(e, out, Issue(_DROPPED, Cause(e, "dropped by filter")))

        return fire

    def _expand_fn(self, node: Node) -> _Handler:
        plan = self.plan
        in_slots = [plan.ports[p].slot for p in node.inputs]
        out_slots = [plan.ports[p].slot for p in node.outputs]
        child = self.domains[node.child_domain]  # type: ignore[index]
        split = self.values.split
        kind = self.values.kind
        nid = node.id

        def fire(e: Entity) -> None:
            items = e.items
            issue = _first_issue(items, in_slots)
            if issue is None:
                parts = []
                for slot in in_slots:
                    elements = split(items[slot])
                    if elements is None:
                        issue = Issue(
                            _FAILED,
                            Cause(
                                e,
                                f"F.expand into {child.name!r} needs a sequence, "
                                f"got {kind(items[slot])}",
                            ),
                        )
                        break
                    parts.append(elements)
                if issue is None and len({len(p) for p in parts}) > 1:
                    lengths = ", ".join(str(len(p)) for p in parts)
                    issue = Issue(
                        _FAILED,
                        Cause(
                            e,
                            f"F.expand_aligned into {child.name!r}: sequences of different "
                            f"lengths ({lengths})",
                        ),
                    )
            children = e.children
            if children is None:
                children = e.children = {}
            if issue is not None:
                children[nid] = issue
                settled = issue.propagated()
                for reduce in child.reduces:
                    self._settle_all(e, reduce.out_slots, settled)
                return
            self._spawn(e, child, nid, parts, out_slots, children)

        return fire

    def _spawn(
        self,
        e: Entity,
        child: DomainState,
        nid: int,
        parts: list[list[Any]],
        out_slots: list[int],
        children: dict[int, list[Entity] | Issue],
    ) -> None:
        n = len(parts[0])
        mb = e.mb
        kids = [Entity(child, e, i, mb, e.source) for i in range(n)]
        children[nid] = kids
        mb.outstanding += n * child.n_slots
        mb.entity_counts[child.name] = mb.entity_counts.get(child.name, 0) + n
        if child.reduces:
            waits = e.waits
            if waits is None:
                waits = e.waits = {}
            for reduce in child.reduces:
                if n:
                    waits[reduce.id] = n * len(reduce.watch_slots)
                else:
                    reduce.gather(e)
        broadcasts = child.broadcasts_in
        settle = self._settle
        if len(out_slots) == 1 and not broadcasts:
            slot = out_slots[0]
            for kid, value in zip(kids, parts[0], strict=True):
                settle(kid, slot, value)
            return
        for i, kid in enumerate(kids):
            for slot, part in zip(out_slots, parts, strict=True):
                settle(kid, slot, part[i])
            for bcast in broadcasts:
                bcast.on_new_entity(kid)

    # -- Calls ----------------------------------------------------------------
    def _fire_call(self, call: CallState, e: Entity) -> None:
        items = e.items
        issue = _first_issue(items, call.in_slots)
        if issue is not None:
            self._settle_all(e, call.out_slots, issue.propagated())
            return
        self._seq += 1
        grain = Grain(call, e, self._seq, self._now)
        parent = e.parent
        if parent is not None:
            grains = e.grains
            if grains is None:
                grains = e.grains = {}
            grains[call.id] = grain
            gfail = parent.gfail
            if gfail is not None and call.id in gfail:
                self._suppress(grain, gfail[call.id][0], queued=False)
                return
        call.queue.push(grain)
        call.ready += 1
        call.pool.ready += 1

    def _suppress(self, grain: Grain, cause: Cause, *, queued: bool = True) -> None:
        """SUPPRESS a Grain; ``queued=False`` for one that never entered its queue."""
        if queued and grain.phase is _READY:
            grain.call.ready -= 1
            grain.call.pool.ready -= 1
        move(grain, GrainEvent.SUPPRESS)
        grain.call.suppressed += 1
        grain.entity.mb.suppressed += 1
        self._settle_all(grain.entity, grain.call.out_slots, Issue(_SUPPRESSED, cause))

    def _commit_failure(self, grain: Grain, message: str) -> None:
        move(grain, GrainEvent.COMMIT)
        grain.call.failed += 1
        issue = Issue(_FAILED, Cause(grain.entity, message))
        self._settle_all(grain.entity, grain.call.out_slots, issue)

    def _group_fail(self, grain: Grain, cause: Cause) -> None:
        """Register a GroupFailure and suppress the siblings still queued for its Call."""
        e = grain.entity
        parent = e.parent
        if parent is None:
            return
        call = grain.call
        gfail = parent.gfail
        if gfail is None:
            gfail = parent.gfail = {}
        if call.id in gfail:
            return
        gfail[call.id] = (cause, grain)
        siblings = parent.children[e.domain.expand]  # type: ignore[index]
        in_flight: set[int] = set()
        for sibling in siblings:  # type: ignore[union-attr]
            other = sibling.grains.get(call.id) if sibling.grains else None
            if other is not None:
                if other.phase is _READY:
                    self._suppress(other, cause)
                elif other.phase is _IN_FLIGHT:
                    in_flight.add(id(other))
        if call.queue.single_parent:
            call.queue.discard_dead(parent)
        if in_flight:
            self._withdraw(call, in_flight)

    def _withdraw(self, call: CallState, doomed: set[int]) -> None:
        """Tell the backend which rows of in-flight batches can no longer commit."""
        for batch in self._batches.values():
            if batch.call is not call:
                continue
            rows = tuple(
                i
                for i, (g, gen) in enumerate(zip(batch.grains, batch.gens, strict=True))
                if id(g) in doomed and g.gen == gen
            )
            if rows:
                call.withdrawn += len(rows)
                self._out.append(Withdraw(batch.id, batch.worker.id, rows))

    # -- dispatch ---------------------------------------------------------------
    def _pump(self, pool: _Pool) -> None:
        workers = list(pool.workers.values())
        calls = pool.calls
        while pool.ready:
            worker = None
            for w in workers:
                if len(w.inflight) < w.capacity and (
                    worker is None or len(w.inflight) < len(worker.inflight)
                ):
                    worker = w
            if worker is None:
                return
            if worker.inflight:
                # A busy worker is only sent full batches: partial ones wait for an idle one.
                candidates = [c for c in calls if c.ready >= c.batch_size]
            else:
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

    def _dispatch(self, call: CallState, worker: _Worker, grains: list[Grain]) -> None:
        self._batch_ids += 1
        batch_id = self._batch_ids
        now = self._now
        wait = 0.0
        dispatch = GrainEvent.DISPATCH
        for grain in grains:
            grain.gen += 1
            move(grain, dispatch)
            wait += now - grain.t_ready
            grain.entity.mb.dispatched += 1
        n = len(grains)
        call.ready -= n
        call.pool.ready -= n
        call.rpcs += 1
        call.dispatched += n
        call.queue_wait_s += wait
        call.batch_hist[n] = call.batch_hist.get(n, 0) + 1
        batch = _Batch(batch_id, call, worker, grains)
        if len(self.timeline) < TIMELINE_CAP:
            self.timeline.append(("dispatch", now, call.name, worker.id, batch_id, n, call.ready))
        self._batches[batch_id] = batch
        worker.inflight[batch_id] = batch
        columns = [[g.entity.items[slot] for g in grains] for slot in call.in_slots]
        self._out.append(Dispatch(batch_id, worker.id, call.node, columns, call.kwargs))

    # -- reports ----------------------------------------------------------------
    def _take_batch(self, batch_id: int, busy_s: float, kind: str) -> _Batch | None:
        batch = self._batches.pop(batch_id, None)
        if batch is None:
            if batch_id in self._lost_batches:
                self.stale_reports += 1
            else:
                self.duplicate_reports += 1
            return None
        batch.worker.inflight.pop(batch_id, None)
        batch.call.busy_s += busy_s
        if len(self.timeline) < TIMELINE_CAP:
            self.timeline.append(
                ("report", self._now, batch.call.name, batch.worker.id, batch_id, busy_s, kind)
            )
        return batch

    @staticmethod
    def _live(batch: _Batch) -> list[tuple[int, Grain]]:
        """Grains of ``batch`` still in flight under the generation it carried."""
        return [
            (i, g)
            for i, (g, gen) in enumerate(zip(batch.grains, batch.gens, strict=True))
            if g.phase is _IN_FLIGHT and g.gen == gen
        ]

    def _on_finished(self, event: BatchFinished) -> None:
        batch = self._take_batch(event.batch, event.busy_s, "finished")
        if batch is None:
            return
        rows = event.rows
        if len(rows) != len(batch.grains):
            self._reject(
                batch, f"the batch result has {len(rows)} rows for {len(batch.grains)} inputs"
            )
            return
        live = self._live(batch)
        call = batch.call
        for i, grain in live:
            row = rows[i]
            if type(row) is GroupFailure:
                self._group_fail(grain, Cause(grain.entity, row.cause))
        settle = self._settle
        n_out = call.n_out
        out_slots = call.out_slots
        commit = GrainEvent.COMMIT
        for i, grain in live:
            if grain.phase is not _IN_FLIGHT:
                continue
            row = rows[i]
            kind = type(row)
            parent = grain.entity.parent
            if parent is not None and parent.gfail is not None and call.id in parent.gfail:
                cause, owner = parent.gfail[call.id]
                if owner is not grain:
                    self._suppress(grain, cause)
                    continue
            if kind is RecordFailure or kind is GroupFailure:
                self._commit_failure(grain, row.cause)
                continue
            if kind is Withdrawn:  # only rows of a group-failed parent may be skipped
                raise InvalidTransition(
                    grain.describe(), grain.phase.value, "commit", ["the backend skipped it"]
                )
            move(grain, commit)
            if n_out == 1:
                settle(grain.entity, out_slots[0], row)
            else:
                for slot, value in zip(out_slots, row, strict=True):
                    settle(grain.entity, slot, value)

    def _reject(self, batch: _Batch, reason: str) -> None:
        for _, grain in self._live(batch):
            if self._group_failed(grain):  # a sibling's GroupFailure came first
                parent: Entity = grain.entity.parent  # type: ignore[assignment]
                self._suppress(grain, parent.gfail[batch.call.id][0])  # type: ignore[index]
            else:
                self._commit_failure(grain, f"{batch.call.name}: {reason}")

    def _on_rejected(self, event: BatchRejected) -> None:
        batch = self._take_batch(event.batch, event.busy_s, "rejected")
        if batch is not None:
            self._reject(batch, event.reason)

    def _on_raised(self, event: BatchRaised) -> None:
        batch = self._take_batch(event.batch, event.busy_s, "raised")
        if batch is None:
            return
        call = batch.call
        grains = [g for _, g in self._live(batch)]
        decision = decide_after_exception(call.recovery, grains)
        if decision.abort:
            self.aborted = ExecutionError(
                f"Call {call.name!r} raised and its recovery policy is abort(): {event.error}"
            )
            self.aborted.__cause__ = event.exception
            self._out.append(Abort(self.aborted))
            return
        self._apply(call, decision, event.error)

    def _on_worker_added(self, event: WorkerAdded) -> None:
        if event.worker in self._workers:
            raise ValueError(f"worker {event.worker!r} is already registered")
        pool = self._pools[event.module]
        capacity = pool.capacity if event.capacity is None else event.capacity
        if capacity < 1:
            raise ValueError(f"worker {event.worker!r}: capacity must be >= 1, got {capacity}")
        worker = _Worker(event.worker, pool, capacity)
        pool.workers[event.worker] = worker
        self._workers[event.worker] = worker

    def _on_worker_lost(self, event: WorkerLost) -> None:
        worker = self._workers.pop(event.worker, None)
        if worker is None:
            return
        del worker.pool.workers[event.worker]
        # A worker runs its batches in dispatch order: the oldest was running, the
        # others were waiting and are not charged an infra retry (none is when the
        # backend killed the worker on purpose). Newest first, so that re-queuing
        # each at the front leaves them in their FIFO order.
        order = sorted(worker.inflight)
        charged = order[0] if order and event.charge else None
        for batch_id in reversed(order):
            batch = worker.inflight[batch_id]
            if len(self.timeline) < TIMELINE_CAP:
                self.timeline.append(
                    ("report", self._now, batch.call.name, worker.id, batch_id, 0.0, "lost")
                )
            del self._batches[batch_id]
            self._lost_batches.add(batch_id)
            grains = [g for _, g in self._live(batch)]
            decision = decide_after_loss(batch.call.recovery, grains, charged=batch_id == charged)
            limit = batch.call.recovery.infra_retries
            self._apply(batch.call, decision, f"{event.reason} (infra_retries={limit} exhausted)")
        worker.inflight.clear()

    def _apply(self, call: CallState, decision: Decision, error: str) -> None:
        """Carry out a recovery decision. Siblings of a GroupFailure that happened
        meanwhile are not run again nor failed: they are SUPPRESSED."""
        doomed = [g for g in decision.retried() + decision.fail if self._group_failed(g)]
        if doomed:
            for grain in doomed:
                parent: Entity = grain.entity.parent  # type: ignore[assignment]
                self._suppress(grain, parent.gfail[call.id][0])  # type: ignore[index]
            decision = decision.without(set(doomed))
        retried = decision.retried()
        retry = GrainEvent.RETRY
        for grain in retried:
            move(grain, retry)
            grain.t_ready = self._now
            grain.entity.mb.retried += 1
        call.retries += len(retried)
        queue = call.queue
        if decision.pinned_front:
            queue.pin(decision.pinned_front, front=True)
        if decision.loose_front:
            queue.push_front(decision.loose_front)
        for group in decision.pinned_tail:
            queue.pin(group, front=False)
        for grain in decision.loose_tail:
            queue.push(grain)
        call.ready += len(retried)
        call.pool.ready += len(retried)
        for grain in decision.fail:
            self._commit_failure(grain, error)

    @staticmethod
    def _group_failed(grain: Grain) -> bool:
        parent = grain.entity.parent
        return parent is not None and parent.gfail is not None and grain.call.id in parent.gfail

    # -- results ----------------------------------------------------------------
    def call_metrics(self) -> list[dict[str, Any]]:
        return [c.metrics() for c in self.calls]


class _Reduce:
    """Gathers a parent's children by ordinal once every child Item it reads is settled."""

    def __init__(self, node: Node, core: Core) -> None:
        plan = core.plan
        self.core = core
        self.id = node.id
        self.expand = core.domains[node.child_domain].expand  # type: ignore[index]
        self.in_slots = [plan.ports[p].slot for p in node.inputs]
        self.member_slot = None if node.members is None else plan.ports[node.members].slot
        watched = set(self.in_slots)
        if self.member_slot is not None:
            watched.add(self.member_slot)
        self.watch_slots = sorted(watched)
        self.out_slots = [plan.ports[p].slot for p in node.outputs]

    def on_child(self, child: Entity) -> None:
        parent: Entity = child.parent  # type: ignore[assignment]
        waits: dict[int, int] = parent.waits  # type: ignore[assignment]
        left = waits[self.id] - 1
        if left:
            waits[self.id] = left
        else:
            del waits[self.id]
            self.gather(parent)

    def gather(self, parent: Entity) -> None:
        kids: list[Entity] = parent.children[self.expand]  # type: ignore[index,assignment]
        lists: list[list[Any]] = [[] for _ in self.in_slots]
        bad: Issue | None = None
        bad_own = False
        member_slot = self.member_slot
        for kid in kids:
            items = kid.items
            if member_slot is not None:
                member = items[member_slot]
                if type(member) is Issue:
                    if member.outcome is not _DROPPED and not bad_own:
                        own = member.cause.origin is kid
                        if bad is None or own:
                            bad, bad_own = member, own
                    continue
            issue = _first_issue(items, self.in_slots)
            if issue is not None:
                if issue.outcome is not _DROPPED and not bad_own:
                    own = issue.cause.origin is kid
                    if bad is None or own:
                        bad, bad_own = issue, own
                continue
            if bad is None:
                for values, slot in zip(lists, self.in_slots, strict=True):
                    values.append(items[slot])
        core = self.core
        if bad is not None:
            core._settle_all(parent, self.out_slots, Issue(_SUPPRESSED, bad.cause))
            return
        gather = core.values.gather
        for slot, values in zip(self.out_slots, lists, strict=True):
            core._settle(parent, slot, gather(values))


class _Broadcast:
    """Repeats an ancestor's Item for each descendant Entity of the target Domain."""

    def __init__(self, node: Node, core: Core) -> None:
        plan = core.plan
        self.core = core
        src = plan.ports[node.inputs[0]]
        self.src_domain = src.domain
        self.src_slot = src.slot
        self.out_slot = plan.ports[node.outputs[0]].slot
        chain = []
        cursor = plan.domains[node.domain]
        while cursor.id != src.domain:
            chain.append(cursor.expand)
            cursor = plan.domains[cursor.parent]  # type: ignore[index]
        self.chain: list[int] = list(reversed(chain))  # type: ignore[arg-type]

    def on_new_entity(self, e: Entity) -> None:
        ancestor = e
        for _ in self.chain:
            ancestor = ancestor.parent  # type: ignore[assignment]
        content = ancestor.items[self.src_slot]
        if content is not PENDING:
            self.core._settle(e, self.out_slot, _carry(content))

    def on_ancestor(self, ancestor: Entity) -> None:
        content = _carry(ancestor.items[self.src_slot])
        level = [ancestor]
        for nid in self.chain:
            nxt: list[Entity] = []
            for e in level:
                kids = e.children.get(nid) if e.children else None
                if type(kids) is list:
                    nxt.extend(kids)
            level = nxt
        for e in level:
            if e.items[self.out_slot] is PENDING:
                self.core._settle(e, self.out_slot, content)


def _release(roots: list[Entity]) -> None:
    """Break the parent/child cycles of a finished microbatch's lineage.

    Reference counting then frees it at once, without waiting for a full
    garbage collection (which executors keep rare; see ``execution.gc_policy``).
    """
    stack = list(roots)
    while stack:
        e = stack.pop()
        children = e.children
        if children:
            for kids in children.values():
                if type(kids) is list:
                    stack.extend(kids)
        e.children = e.grains = e.gfail = e.waits = None


_RANK = {ItemOutcome.DROPPED: 1, ItemOutcome.SUPPRESSED: 2, ItemOutcome.FAILED: 3}


def _carry(content: Any) -> Any:
    return content.propagated() if type(content) is Issue else content


def _first_issue(items: list[Any], slots: list[int]) -> Issue | None:
    """The Issue an Item reading ``slots`` inherits: a failure first, else a drop."""
    found: Issue | None = None
    for slot in slots:
        content = items[slot]
        if type(content) is Issue:
            if content.outcome is not _DROPPED:
                return content
            if found is None:
                found = content
    return found


def _output_issue(issue: Issue, root: Entity) -> OutputIssue:
    """How a non-PRESENT output Item of source ``root`` is reported."""
    if issue.outcome is _DROPPED:
        return OutputIssue(ItemOutcome.DROPPED, issue.cause.text)
    outcome = _FAILED if issue.cause.origin is root else _SUPPRESSED
    return OutputIssue(outcome, issue.cause.text)


def _check_columns(plan: Plan, columns: Sequence[Sequence[Any]]) -> list[Sequence[Any]]:
    expected = len(plan.sources)
    if len(columns) != expected:
        names = ", ".join(plan.ports[p].label for p in plan.sources)
        raise ValueError(
            f"{plan.pipeline} takes {expected} source column(s) ({names}); got {len(columns)}"
        )
    checked: list[Sequence[Any]] = []
    for port, column in zip(plan.sources, columns, strict=True):
        if isinstance(column, (str, bytes)) or not hasattr(column, "__len__"):
            raise ValueError(
                f"source column {plan.ports[port].label!r} must be a sequence of rows, "
                f"got {type(column).__name__}"
            )
        checked.append(column if isinstance(column, (list, tuple)) else list(column))
    lengths = {len(c) for c in checked}
    if len(lengths) > 1:
        raise ValueError(f"source columns have different lengths: {sorted(lengths)}")
    return checked
