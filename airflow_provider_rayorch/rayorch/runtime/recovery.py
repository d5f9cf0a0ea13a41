"""Recovery decisions: what happens to the Grains of a batch that raised or was lost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..program.options import RecoveryKind, RecoveryPolicy

if TYPE_CHECKING:
    from .lineage import Grain

__all__ = ["Decision", "decide_after_exception", "decide_after_loss"]


@dataclass
class Decision:
    """Where each Grain of a failed batch goes next. Each Grain is in one list."""

    abort: bool = False
    #: Re-run at once, as one batch of their own.
    pinned_front: list[Grain] = field(default_factory=list)
    #: Re-run behind the queue, each list as one batch of its own.
    pinned_tail: list[list[Grain]] = field(default_factory=list)
    #: Re-run at once, loose (they may share a batch with other Grains).
    loose_front: list[Grain] = field(default_factory=list)
    #: Re-run behind the queue, loose.
    loose_tail: list[Grain] = field(default_factory=list)
    #: Give up: these FAIL.
    fail: list[Grain] = field(default_factory=list)

    def without(self, drop: set[Grain]) -> Decision:
        """The same decision for every Grain but those in ``drop``."""
        return Decision(
            abort=self.abort,
            pinned_front=[g for g in self.pinned_front if g not in drop],
            pinned_tail=[
                kept for group in self.pinned_tail if (kept := [g for g in group if g not in drop])
            ],
            loose_front=[g for g in self.loose_front if g not in drop],
            loose_tail=[g for g in self.loose_tail if g not in drop],
            fail=[g for g in self.fail if g not in drop],
        )

    def retried(self) -> list[Grain]:
        out = list(self.pinned_front) + list(self.loose_front) + list(self.loose_tail)
        for group in self.pinned_tail:
            out.extend(group)
        return out


def decide_after_exception(policy: RecoveryPolicy, grains: list[Grain]) -> Decision:
    """Decide for a batch whose ``run()`` raised; retries are counted per Grain."""
    decision = Decision()
    if policy.kind is RecoveryKind.ABORT:
        decision.abort = True
        return decision
    fresh = [g for g in grains if g.retries < policy.max_retries]
    spent = [g for g in grains if g.retries >= policy.max_retries]
    for grain in fresh:
        grain.retries += 1
    if policy.kind is RecoveryKind.RETRY_BATCH:
        decision.pinned_front = fresh
        decision.fail = spent
    elif policy.kind is RecoveryKind.RETRY_TAIL:
        decision.loose_tail = fresh
        decision.fail = spent
    else:  # ISOLATE_TAIL: retry, then halve until a poisoned Grain is alone
        if fresh:
            decision.pinned_tail.append(fresh)
        if len(grains) == 1:
            decision.fail = spent  # it raised alone: it is the poisoned row
        elif len(spent) == 1:
            decision.pinned_tail.append(spent)  # try it alone before blaming it
        elif spent:
            half = (len(spent) + 1) // 2
            decision.pinned_tail += [spent[:half], spent[half:]]
    return decision


def decide_after_loss(
    policy: RecoveryPolicy, grains: list[Grain], *, charged: bool = True, keep_batch: bool = False
) -> Decision:
    """Decide for the Grains of a batch whose actor (or node) died.

    Only the batch the actor was running is ``charged`` an infra retry; batches
    still waiting in the actor's queue just run again elsewhere. With ``keep_batch``
    (a worker killed on purpose) the batch runs again as the batch it was, so a
    retry's split stays split; otherwise its Grains may share a batch with others.
    """
    decision = Decision()
    front = decision.pinned_front if keep_batch else decision.loose_front
    for grain in grains:
        if charged:
            grain.infra += 1
        if grain.infra <= policy.infra_retries:
            front.append(grain)
        else:
            decision.fail.append(grain)
    return decision
