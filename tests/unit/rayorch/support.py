"""Shared helpers of the engine tests: invariant checks and tiny UDFs."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.runtime.lineage import PENDING, Issue
from airflow_provider_rayorch.rayorch.runtime.phases import GrainPhase
from airflow_provider_rayorch.rayorch.runtime.queues import _Pinned

if TYPE_CHECKING:
    from collections.abc import Iterator

    from airflow_provider_rayorch.rayorch.runtime.core import Core
    from airflow_provider_rayorch.rayorch.runtime.lineage import Entity, Grain

#: Hypothesis settings of every engine test: no deadline (CI machines are noisy);
#: derandomized in CI so a red build is reproducible.
HYPOTHESIS: dict[str, Any] = {
    "deadline": None,
    "derandomize": bool(os.environ.get("CI")),
    "print_blob": True,
}

R, F, D, S = (
    GrainPhase.READY,
    GrainPhase.IN_FLIGHT,
    GrainPhase.DONE,
    GrainPhase.SUPPRESSED,
)


# -- invariants ----------------------------------------------------------------
def queue_entries(queue: Any) -> Iterator[tuple[Grain, int]]:
    """Every (grain, generation) entry a ReadyQueue holds, dead or alive."""
    for entry in queue._order:
        if isinstance(entry, _Pinned):
            yield from entry.entries
        else:
            yield entry


def live_queue_grains(queue: Any) -> list[Grain]:
    """Grains of live queue entries (READY under the generation they were queued with)."""
    return [g for g, gen in queue_entries(queue) if g.phase is R and g.gen == gen]


def entities(core: Core) -> Iterator[Entity]:
    """Every Entity of the active microbatches (finished ones are released)."""
    stack = [e for mb in core.active for e in mb.roots]
    while stack:
        e = stack.pop()
        yield e
        if e.children:
            for kids in e.children.values():
                if type(kids) is list:
                    stack.extend(kids)


def check_core(core: Core) -> None:
    """Invariants that hold between any two events of a healthy core."""
    seen: dict[int, Grain] = {}
    # Ready queues: counters equal live entries; no Grain queued twice.
    for call in core.calls:
        live = live_queue_grains(call.queue)
        ids = [id(g) for g in live]
        assert len(ids) == len(set(ids)), f"{call.name}: a Grain is queued twice"
        assert call.ready == len(live), f"{call.name}: ready={call.ready}, live={len(live)}"
        for g, _ in queue_entries(call.queue):
            seen[id(g)] = g
        if call.queue.single_parent:
            bucketed = [
                g
                for bucket in call.queue._by_parent.values()
                for g, gen in bucket
                if g.phase is R and g.gen == gen
            ]
            loose = [
                e[0]
                for e in call.queue._order
                if not isinstance(e, _Pinned) and e[0].phase is R and e[0].gen == e[1]
            ]
            assert sorted(map(id, bucketed)) == sorted(map(id, loose)), (
                f"{call.name}: sibling buckets disagree with the FIFO"
            )
    for pool in core._pools:
        assert pool.ready == sum(c.ready for c in pool.calls)
        for w in pool.workers.values():
            assert len(w.inflight) <= w.capacity
    # Batches: the workers' in-flight sets partition the core's batches.
    held = [b for w in core._workers.values() for b in w.inflight]
    assert sorted(held) == sorted(core._batches), "workers and core disagree on batches"
    flights: dict[int, int] = {}
    for batch in core._batches.values():
        for g, gen in zip(batch.grains, batch.gens, strict=True):
            seen[id(g)] = g
            if g.phase is F and g.gen == gen:
                flights[id(g)] = flights.get(id(g), 0) + 1
    for e in entities(core):
        if e.grains:
            for g in e.grains.values():
                seen[id(g)] = g
    live_ready = {id(g) for c in core.calls for g in live_queue_grains(c.queue)}
    for key, g in seen.items():
        assert g.phase in (R, F, D, S)
        if g.phase is F:
            assert flights.get(key) == 1, (
                f"{g.describe()} is in flight in {flights.get(key)} batches"
            )
        else:
            assert key not in flights
        if g.phase is R:
            assert key in live_ready, f"{g.describe()} is READY but in no queue"
        outs = [g.entity.items[s] for s in g.call.out_slots]
        if g.phase in (R, F):
            assert all(o is PENDING for o in outs), f"{g.describe()} settled before commit"
        else:
            assert all(o is not PENDING for o in outs), f"{g.describe()} terminal, Item pending"
        if g.phase is S:
            assert all(type(o) is Issue and o.outcome is ro.ItemOutcome.SUPPRESSED for o in outs)
    # Microbatch accounting: outstanding == pending Item slots.
    for mb in core.active:
        stack = list(mb.roots)
        pending = 0
        while stack:
            e = stack.pop()
            pending += sum(1 for item in e.items if item is PENDING)
            if e.children:
                for kids in e.children.values():
                    if type(kids) is list:
                        stack.extend(kids)
        assert pending == mb.outstanding, f"mb {mb.index}: {pending} pending, {mb.outstanding}"
    if core.finished and core.aborted is None:
        check_finished(core)


def check_finished(core: Core) -> None:
    """A core that reported RunFinished holds nothing."""
    assert core.in_flight == 0, "batches still in flight after RunFinished"
    assert core.ready_grains() == 0, "ready Grains left after RunFinished"
    assert not core.active
    total = sum(mb.count for mb in core.done)
    assert total <= core.num_sources
    for mb in core.done:
        assert mb.finished is not None
        assert len(mb.source_outcomes) == mb.count
        for port in mb.outputs:
            assert len(port) == mb.count
            assert all(v is not PENDING for v in port)


# -- tiny UDFs -----------------------------------------------------------------
class Identity:
    def run(self, xs: list[Any]) -> list[Any]:
        return list(xs)


class Double:
    def run(self, xs: list[Any]) -> list[Any]:
        return [2 * x for x in xs]


class Pair:
    def run(self, xs: list[Any], ys: list[Any]) -> list[Any]:
        return list(zip(xs, ys, strict=True))


class RangeOf:
    """x -> [0, 1, ..., x-1]"""

    def run(self, xs: list[Any]) -> list[Any]:
        return [list(range(x)) if isinstance(x, int) else x for x in xs]
