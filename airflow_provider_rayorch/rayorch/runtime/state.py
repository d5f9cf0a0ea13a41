"""The core's run state: Domains, Calls, pools, workers, batches and microbatches.

Plain records: the transitions (``transitions.py``), the scheduler
(``scheduling.py``) and admission (``admission.py``) change them; nothing
else does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..outcomes import ItemOutcome
from ..summary import FAILURES_CAP, microbatch_summary

if TYPE_CHECKING:
    from ..program.options import RecoveryPolicy
    from .lineage import Entity, Grain
    from .lowering import LoweredCall
    from .queues import ReadyQueue
    from .structural import Broadcaster, Reducer

__all__ = [
    "BatchRecord",
    "CallState",
    "DomainState",
    "FinishedMicrobatch",
    "Handler",
    "HostState",
    "Microbatch",
    "PoolState",
    "WorkerState",
]

#: What runs when an Item of an Entity gets its outcome.
Handler = Callable[["Entity"], None]


class DomainState:
    """One Domain of the run: its Item slots and who waits on each of them."""

    __slots__ = (
        "broadcasts_in",
        "consumers",
        "depth",
        "expand",
        "id",
        "labels",
        "n_slots",
        "name",
        "reduces",
    )

    def __init__(
        self, id: int, name: str, labels: tuple[str, ...], depth: int, expand: int | None
    ) -> None:
        self.id = id
        self.name = name
        self.labels = labels
        self.n_slots = len(labels)
        self.depth = depth
        self.expand = expand
        #: slot -> handlers to call when that Item gets an outcome.
        self.consumers: list[list[Handler]] = [[] for _ in labels]
        #: reduce nodes gathering this Domain's Entities back to their parents.
        self.reduces: list[Reducer] = []
        #: broadcasts writing into this Domain.
        self.broadcasts_in: list[Broadcaster] = []


class PoolState:
    """A module's actor pool: its Calls, its workers and how many Grains wait."""

    __slots__ = ("calls", "capacity", "module", "ready", "replicas", "workers")

    def __init__(self, module: int, replicas: int, capacity: int) -> None:
        self.module = module
        self.replicas = replicas
        self.capacity = capacity
        self.calls: list[CallState] = []
        self.workers: dict[Any, WorkerState] = {}
        self.ready = 0


class CallState:
    """A Call's ready queue, options and counters."""

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

    def __init__(self, lowered: LoweredCall, pool: PoolState, queue: ReadyQueue) -> None:
        node = lowered.node
        self.node = node
        self.id = node.id
        self.name = node.name
        self.in_slots = lowered.in_slots
        self.out_slots = lowered.out_slots
        self.n_out = len(lowered.out_slots)
        self.kwargs = lowered.kwargs
        self.batch_size = lowered.batch_size
        self.recovery: RecoveryPolicy = lowered.recovery
        self.queue = queue
        self.pool = pool
        #: Grains live in ``queue``.
        self.ready = 0
        self.rpcs = self.dispatched = self.retries = self.suppressed = self.failed = 0
        #: Rows of in-flight batches a sibling's GroupFailure made moot.
        self.withdrawn = 0
        self.busy_s = self.queue_wait_s = 0.0
        #: batch size -> batches dispatched with that many Grains.
        self.batch_hist: dict[int, int] = {}


class HostState:
    """The process one or more workers run in: a worker of its own, or the workers of
    the modules that share one process (``ray_options(share_process=...)``)."""

    __slots__ = ("busy", "draining", "quarantined", "shared", "workers")

    def __init__(self, *, shared: bool = False) -> None:
        self.shared = shared
        #: The workers it runs.
        self.workers: list[WorkerState] = []
        #: Batches in flight on all its workers.
        self.busy = 0
        #: In-flight batches holding a Grain that was on a dead worker (0 or 1): while
        #: one runs, no worker of the process takes another batch.
        self.quarantined = 0
        #: Such a Grain waits for the process to be idle: its workers take nothing new.
        self.draining = False


class WorkerState:
    __slots__ = ("capacity", "host", "id", "inflight", "pool")

    def __init__(self, id: Any, pool: PoolState, capacity: int, host: HostState) -> None:
        self.id = id
        self.pool = pool
        self.capacity = capacity
        self.host = host
        #: batch id -> batch, in dispatch order.
        self.inflight: dict[int, BatchRecord] = {}


class BatchRecord:
    """A dispatched batch: its Grains and the generation each was dispatched under."""

    __slots__ = ("call", "gens", "grains", "id", "suspect", "worker")

    def __init__(self, id: int, call: CallState, worker: WorkerState, grains: list[Grain]) -> None:
        self.id = id
        self.call = call
        self.worker = worker
        self.grains = grains
        self.gens = [g.gen for g in grains]
        #: It holds a Grain that was in flight on a worker that died.
        self.suspect = any(g.lost for g in grains)


class Microbatch:
    """One admitted slice of the sources, and what became of it.

    The core holds it while it is active; once done it goes out with its
    ``MicrobatchDone`` command and whoever needs more than its ``FinishedMicrobatch``
    record keeps it (the core does not)."""

    def __init__(self, index: int, first_source: int, count: int, now: float) -> None:
        self.index = index
        self.first_source = first_source
        self.count = count
        self.roots: list[Entity] = []
        #: Item slots of its Entities still PENDING.
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

    def record(self) -> FinishedMicrobatch:
        """Its counters and failures, without its values, outcomes per source or lineage."""
        return FinishedMicrobatch(self)

    def lineage(self, max_failed_ratio: float = 0.0, **identity: Any) -> dict[str, Any]:
        """The microbatch's lineage summary (API.md section 3)."""
        return self.record().lineage(max_failed_ratio, **identity)


class FinishedMicrobatch:
    """What is kept of a finished microbatch: counters, times and the failed sources
    its lineage summary lists; no values, no outcome per source, no lineage."""

    __slots__ = (
        "count",
        "dispatched",
        "entity_counts",
        "failures",
        "finished",
        "first_source",
        "index",
        "outcomes",
        "retried",
        "started",
        "suppressed",
    )

    def __init__(self, mb: Microbatch) -> None:
        self.index = mb.index
        self.first_source = mb.first_source
        self.count = mb.count
        self.entity_counts = dict(mb.entity_counts)
        self.dispatched, self.retried, self.suppressed = mb.dispatched, mb.retried, mb.suppressed
        self.started, self.finished = mb.started, mb.finished
        self.outcomes = mb.outcome_counts()
        #: The failures its summary lists (at most ``FAILURES_CAP``).
        self.failures = mb.failures[:FAILURES_CAP]

    @property
    def elapsed_s(self) -> float:
        return (self.finished or self.started) - self.started

    def outcome_counts(self) -> dict[str, int]:
        return dict(self.outcomes)

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
