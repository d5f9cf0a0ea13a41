"""The core's invariants, checked between any two events by ``Core.validate()``.

Ready counters equal live queue entries; every in-flight Grain is in exactly
one live batch; settled Items match Grain phases; microbatch accounting adds
up; each microbatch finishes with complete outputs; a core that finished holds no
batch, no ready Grain and no microbatch, and finished every one it admitted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InvalidTransition
from ..outcomes import ItemOutcome
from .lineage import PENDING, Issue
from .phases import GrainPhase

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .core import Core
    from .lineage import Entity, Grain

__all__ = ["BrokenInvariant", "validate", "validate_done", "validate_finished"]

R, F, D, S = GrainPhase.READY, GrainPhase.IN_FLIGHT, GrainPhase.DONE, GrainPhase.SUPPRESSED


class BrokenInvariant(InvalidTransition, AssertionError):
    """A core invariant does not hold: a bug in the core or in a backend driving it.

    ``invariant`` names the rule, ``detail`` says what was found.
    """

    def __init__(self, invariant: str, detail: str) -> None:
        self.invariant = invariant
        self.detail = detail
        self.grain, self.phase, self.event, self.story = "core", "broken", "validate", (detail,)
        Exception.__init__(self, f"core invariant {invariant!r} broken: {detail}")


def _require(ok: bool, invariant: str, detail: str) -> None:
    if not ok:
        raise BrokenInvariant(invariant, detail)


def entities(core: Core) -> Iterator[Entity]:
    """Every Entity of the active microbatches (finished ones are released)."""
    return _tree([e for mb in core.active for e in mb.roots])


def validate(core: Core) -> None:
    """Raise ``BrokenInvariant`` naming the first invariant of ``core`` that fails."""
    seen: dict[int, Grain] = {}
    live_ready: set[int] = set()
    for call in core.calls:
        live = call.queue.live_grains()
        ids = {id(g) for g in live}
        _require(len(ids) == len(live), "queued once", f"{call.name}: a Grain is queued twice")
        _require(
            call.ready == len(live),
            "ready counter",
            f"{call.name}: ready={call.ready}, live={len(live)}",
        )
        live_ready |= ids
        for g, _ in call.queue.entries():
            seen[id(g)] = g
        _require(
            call.queue.sibling_buckets_agree(),
            "sibling buckets",
            f"{call.name}: sibling buckets disagree with the FIFO",
        )
    for pool in core._pools:
        ready = sum(c.ready for c in pool.calls)
        _require(
            pool.ready == ready,
            "pool ready counter",
            f"pool of module {pool.module}: ready={pool.ready}, calls={ready}",
        )
        for w in pool.workers.values():
            _require(
                len(w.inflight) <= w.capacity,
                "worker capacity",
                f"worker {w.id!r} holds {len(w.inflight)} batches, capacity {w.capacity}",
            )
    hosts = {id(w.host): w.host for w in core._workers.values()}
    for host in hosts.values():
        batches = [b for w in host.workers for b in w.inflight.values()]
        _require(
            host.busy == len(batches) and host.quarantined == sum(b.suspect for b in batches) <= 1,
            "process counters",
            f"a process of workers {[w.id for w in host.workers]!r}: busy={host.busy}, "
            f"quarantined={host.quarantined}, batches={len(batches)}",
        )
    held = [b for w in core._workers.values() for b in w.inflight]
    _require(
        sorted(held) == sorted(core._batches),
        "batches partition",
        "workers and core disagree on batches",
    )
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
    for key, g in seen.items():
        _check_grain(g, flights.get(key), key in live_ready)
    for mb in core.active:
        pending = sum(sum(1 for item in e.items if item is PENDING) for e in _tree(mb.roots))
        _require(
            pending == mb.outstanding,
            "outstanding count",
            f"mb {mb.index}: {pending} pending, {mb.outstanding} outstanding",
        )
    validate_done(core)
    if core.finished and core.aborted is None:
        validate_finished(core)


def _check_grain(g: Grain, flights: int | None, queued: bool) -> None:
    if g.phase is F:
        _require(
            flights == 1, "one live batch", f"{g.describe()} is in flight in {flights} batches"
        )
    else:
        _require(
            flights is None,
            "one live batch",
            f"{g.describe()} ({g.phase.value}) is in a live batch",
        )
    if g.phase is R:
        _require(queued, "ready means queued", f"{g.describe()} is READY but in no queue")
    outs = [g.entity.items[s] for s in g.call.out_slots]
    if g.phase is R or g.phase is F:
        _require(
            all(o is PENDING for o in outs),
            "commit settles",
            f"{g.describe()} settled before commit",
        )
    else:
        _require(
            all(o is not PENDING for o in outs),
            "commit settles",
            f"{g.describe()} terminal, Item pending",
        )
    if g.phase is S:
        _require(
            all(type(o) is Issue and o.outcome is ItemOutcome.SUPPRESSED for o in outs),
            "suppressed outputs",
            f"{g.describe()} is SUPPRESSED but its outputs are not",
        )


def _tree(roots: list[Entity]) -> Iterator[Entity]:
    stack = list(roots)
    while stack:
        e = stack.pop()
        yield e
        if e.children:
            for kids in e.children.values():
                if type(kids) is list:
                    stack.extend(kids)


def validate_done(core: Core) -> None:
    """The microbatches the last event finished (those still referenced) are complete."""
    for ref in core._admission.just_done:
        mb = ref()
        if mb is None:
            continue
        _require(mb.finished is not None, "closed", f"mb {mb.index} done but not closed")
        _require(
            len(mb.source_outcomes) == mb.count,
            "one outcome per source",
            f"mb {mb.index}: {len(mb.source_outcomes)} outcomes for {mb.count} sources",
        )
        for port in mb.outputs:
            _require(
                len(port) == mb.count and all(v is not PENDING for v in port),
                "complete outputs",
                f"mb {mb.index}: an output Port is short or PENDING",
            )


def validate_finished(core: Core) -> None:
    """A core that reported RunFinished holds nothing, and finished all it admitted."""
    _require(core.in_flight == 0, "finished is empty", "batches still in flight after RunFinished")
    _require(core.ready_grains() == 0, "finished is empty", "ready Grains left after RunFinished")
    _require(not core.active, "finished is empty", "microbatches still active after RunFinished")
    admission = core._admission
    _require(
        admission.microbatches_done == admission.admitted,
        "every admitted microbatch done",
        f"{admission.microbatches_done} of {admission.admitted} admitted microbatches done",
    )
    total = core.sources_done
    _require(total <= core.num_sources, "sources", f"{total} sources done of {core.num_sources}")
