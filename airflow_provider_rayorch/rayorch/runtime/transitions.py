"""Grain transitions: queue, dispatch, commit, fail, suppress, retry.

Every phase change of a Grain goes through ``Transitions``, and each
transition updates the counters it affects (ready counts of the Call and the
pool, per-Call and per-microbatch tallies) in the same place, so no other part
of the core touches them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InvalidTransition
from ..outcomes import GroupFailure, ItemOutcome, RecordFailure
from .events import Command, Withdraw, Withdrawn
from .items import first_issue, settle, settle_all
from .lineage import Cause, Grain, Issue
from .phases import GrainEvent, GrainPhase, move

if TYPE_CHECKING:
    from .lineage import Entity
    from .recovery import Decision
    from .state import BatchRecord, CallState

__all__ = ["Transitions"]

_READY, _IN_FLIGHT = GrainPhase.READY, GrainPhase.IN_FLIGHT
_FAILED, _SUPPRESSED = ItemOutcome.FAILED, ItemOutcome.SUPPRESSED


class Transitions:
    """Moves Grains between phases and keeps the counters those moves change."""

    __slots__ = ("batches", "dispatched", "now", "out", "seq")

    def __init__(self, batches: dict[int, BatchRecord], out: list[Command]) -> None:
        #: The in-flight batches (owned by the scheduler), for withdrawals.
        self.batches = batches
        #: Where commands go (owned by the core).
        self.out = out
        #: The clock reading of the event being handled.
        self.now = 0.0
        #: Sequence number of the last Grain made (FIFO order across Calls).
        self.seq = 0
        #: Grains dispatched in this run, over every Call. An int rebound by the
        #: dispatching thread only, so another thread may read it (progress lines).
        self.dispatched = 0

    # -- into the ready queue --------------------------------------------------------
    def new_grain(self, call: CallState, e: Entity) -> None:
        """``call``'s inputs in ``e`` are settled: queue its Grain (or settle its
        outputs at once when an input has an Issue)."""
        issue = first_issue(e.items, call.in_slots)
        if issue is not None:
            settle_all(e, call.out_slots, issue.propagated())
            return
        self.seq += 1
        grain = Grain(call, e, self.seq, self.now)
        parent = e.parent
        if parent is not None:
            grains = e.grains
            if grains is None:
                grains = e.grains = {}
            grains[call.id] = grain
            gfail = parent.gfail
            if gfail is not None and call.id in gfail:
                self.suppress(grain, gfail[call.id][0], queued=False)
                return
        call.queue.push(grain)
        call.ready += 1
        call.pool.ready += 1

    def retry(self, call: CallState, decision: Decision, error: str) -> None:
        """Carry out a recovery decision. Siblings of a GroupFailure that happened
        meanwhile are not run again nor failed: they are SUPPRESSED."""
        doomed = [g for g in decision.retried() + decision.fail if group_failed(g)]
        if doomed:
            for grain in doomed:
                parent: Entity = grain.entity.parent  # type: ignore[assignment]
                self.suppress(grain, parent.gfail[call.id][0])  # type: ignore[index]
            decision = decision.without(set(doomed))
        retried = decision.retried()
        event = GrainEvent.RETRY
        now = self.now
        for grain in retried:
            move(grain, event)
            grain.t_ready = now
            grain.entity.mb.retried += 1
        queue = call.queue
        for group in reversed(decision.pinned_front):  # the first ends up in front
            queue.pin(group, front=True)
        if decision.loose_front:
            queue.push_front(decision.loose_front)
        for group in decision.pinned_tail:
            queue.pin(group, front=False)
        for grain in decision.loose_tail:
            queue.push(grain)
        n = len(retried)
        call.retries += n
        call.ready += n
        call.pool.ready += n
        for grain in decision.fail:
            self.commit_failure(grain, error)

    # -- out of it ---------------------------------------------------------------------
    def dispatch(self, call: CallState, grains: list[Grain]) -> None:
        """``grains``, just taken from ``call``'s queue, go in flight as one batch."""
        now = self.now
        wait = 0.0
        event = GrainEvent.DISPATCH
        for grain in grains:
            grain.gen += 1
            move(grain, event)
            wait += now - grain.t_ready
            grain.entity.mb.dispatched += 1
        n = len(grains)
        call.ready -= n
        call.pool.ready -= n
        call.rpcs += 1
        call.dispatched += n
        self.dispatched += n
        call.queue_wait_s += wait
        call.batch_hist[n] = call.batch_hist.get(n, 0) + 1

    def suppress(self, grain: Grain, cause: Cause, *, queued: bool = True) -> None:
        """SUPPRESS a Grain; ``queued=False`` for one that never entered its queue."""
        call = grain.call
        if queued and grain.phase is _READY:
            call.ready -= 1
            call.pool.ready -= 1
        move(grain, GrainEvent.SUPPRESS)
        call.suppressed += 1
        grain.entity.mb.suppressed += 1
        settle_all(grain.entity, call.out_slots, Issue(_SUPPRESSED, cause))

    # -- commits -------------------------------------------------------------------------
    def commit_rows(self, batch: BatchRecord, rows: list[Any]) -> None:
        """Commit the rows of a finished batch to its Grains still in flight."""
        live = live_grains(batch)
        call = batch.call
        for i, grain in live:
            row = rows[i]
            if type(row) is GroupFailure:
                self.group_fail(grain, Cause(grain.entity, row.cause))
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
                    self.suppress(grain, cause)
                    continue
            if kind is RecordFailure or kind is GroupFailure:
                self.commit_failure(grain, row.cause)
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

    def reject(self, batch: BatchRecord, reason: str) -> None:
        """The batch's result was malformed: its Grains FAIL (no retry)."""
        for _, grain in live_grains(batch):
            if group_failed(grain):  # a sibling's GroupFailure came first
                parent: Entity = grain.entity.parent  # type: ignore[assignment]
                self.suppress(grain, parent.gfail[batch.call.id][0])  # type: ignore[index]
            else:
                self.commit_failure(grain, f"{batch.call.name}: {reason}")

    def commit_failure(self, grain: Grain, message: str) -> None:
        move(grain, GrainEvent.COMMIT)
        grain.call.failed += 1
        issue = Issue(_FAILED, Cause(grain.entity, message))
        settle_all(grain.entity, grain.call.out_slots, issue)

    # -- group failures ------------------------------------------------------------------
    def group_fail(self, grain: Grain, cause: Cause) -> None:
        """Register a GroupFailure and suppress the siblings still queued for its Call,
        and their queued Grains of Calls only it reads from."""
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
        siblings: list[Entity] = parent.children[e.domain.expand]  # type: ignore[index,assignment]
        in_flight: set[int] = set()
        for sibling in siblings:
            other = sibling.grains.get(call.id) if sibling.grains else None
            if other is not None:
                if other.phase is _READY:
                    self.suppress(other, cause)
                elif other.phase is _IN_FLIGHT:
                    in_flight.add(id(other))
        self._suppress_feeders(call, siblings, cause)
        if call.queue.single_parent:
            call.queue.discard_dead(parent)
        if in_flight:
            self._withdraw(call, in_flight)

    def _suppress_feeders(self, call: CallState, siblings: list[Entity], cause: Cause) -> None:
        """Suppress the siblings' queued Grains of Calls whose every output only ``call``
        reads: ``call``'s Grains of those siblings are SUPPRESSED, so the work is moot
        (suppressing them settles the same outcome, with the same cause)."""
        for sibling in siblings:
            grains = sibling.grains
            if not grains:
                continue
            consumers = sibling.domain.consumers
            for other in list(grains.values()):
                if other.call is call or other.phase is not _READY:
                    continue
                if all(
                    slot in call.in_slots and len(consumers[slot]) == 1
                    for slot in other.call.out_slots
                ):
                    self.suppress(other, cause)

    def _withdraw(self, call: CallState, doomed: set[int]) -> None:
        """Tell the backend which rows of in-flight batches can no longer commit."""
        for batch in self.batches.values():
            if batch.call is not call:
                continue
            rows = tuple(
                i
                for i, (g, gen) in enumerate(zip(batch.grains, batch.gens, strict=True))
                if id(g) in doomed and g.gen == gen
            )
            if rows:
                call.withdrawn += len(rows)
                self.out.append(Withdraw(batch.id, batch.worker.id, rows))


def live_grains(batch: BatchRecord) -> list[tuple[int, Grain]]:
    """Grains of ``batch`` still in flight under the generation it carried (the fence)."""
    return [
        (i, g)
        for i, (g, gen) in enumerate(zip(batch.grains, batch.gens, strict=True))
        if g.phase is _IN_FLIGHT and g.gen == gen
    ]


def group_failed(grain: Grain) -> bool:
    """Whether a sibling's GroupFailure for ``grain``'s Call came first."""
    parent = grain.entity.parent
    return parent is not None and parent.gfail is not None and grain.call.id in parent.gfail
