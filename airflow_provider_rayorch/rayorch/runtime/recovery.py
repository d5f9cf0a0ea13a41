"""Recovery decisions: what happens to the Grains of a batch that raised or was lost.

Every retrying policy isolates before it blames: a Grain FAILS with an exception
only when it raised in a batch of its own, so no row fails with another row's
exception.
"""

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
    #: Re-run at once, each list as one batch of its own, in this order.
    pinned_front: list[list[Grain]] = field(default_factory=list)
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

        def groups(lists: list[list[Grain]]) -> list[list[Grain]]:
            return [kept for group in lists if (kept := [g for g in group if g not in drop])]

        return Decision(
            abort=self.abort,
            pinned_front=groups(self.pinned_front),
            pinned_tail=groups(self.pinned_tail),
            loose_front=[g for g in self.loose_front if g not in drop],
            loose_tail=[g for g in self.loose_tail if g not in drop],
            fail=[g for g in self.fail if g not in drop],
        )

    def retried(self) -> list[Grain]:
        out = list(self.loose_front) + list(self.loose_tail)
        for group in self.pinned_front + self.pinned_tail:
            out.extend(group)
        return out


def decide_after_exception(
    policy: RecoveryPolicy, grains: list[Grain], *, alone: bool | None = None
) -> Decision:
    """Decide for a batch whose ``run()`` raised; retries are counted per Grain.

    Grains with retries left run again (``retry_batch``: pinned at the front;
    ``retry_tail``: loose behind the queue; ``isolate_tail``: pinned behind it).
    Grains whose retries are spent FAIL only if the batch ran ``alone`` (one row,
    by default ``len(grains) == 1``); otherwise they are split, a lone spent Grain
    tried alone and several halved, each part pinned (at the front for
    ``retry_batch``, behind the queue otherwise), until a row that raises alone
    FAILS with its own exception.
    """
    decision = Decision()
    kind = policy.kind
    if kind is RecoveryKind.ABORT:
        decision.abort = True
        return decision
    fresh = [g for g in grains if g.retries < policy.max_retries]
    spent = [g for g in grains if g.retries >= policy.max_retries]
    for grain in fresh:
        grain.retries += 1
    pinned = decision.pinned_front if kind is RecoveryKind.RETRY_BATCH else decision.pinned_tail
    if fresh:
        if kind is RecoveryKind.RETRY_TAIL:
            decision.loose_tail = fresh
        else:
            pinned.append(fresh)
    if not spent:
        return decision
    if len(grains) == 1 if alone is None else alone:
        decision.fail = spent  # it raised alone: the exception is its own
    elif len(spent) == 1:
        pinned.append(spent)  # try it alone before blaming it
    else:
        half = (len(spent) + 1) // 2
        pinned += [spent[:half], spent[half:]]
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
    again: list[Grain] = []
    for grain in grains:
        if charged:
            grain.infra += 1
        if grain.infra <= policy.infra_retries:
            again.append(grain)
        else:
            decision.fail.append(grain)
    if not again:
        return decision
    if keep_batch:
        decision.pinned_front.append(again)
    else:
        decision.loose_front = again
    return decision
