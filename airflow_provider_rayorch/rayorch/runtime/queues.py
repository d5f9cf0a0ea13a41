"""Per-Call FIFO ready queues and the two batching policies.

Queues delete lazily: an entry is live only while its Grain is READY under the
generation it was queued with, so suppressing or re-queuing a Grain never
searches the queue.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from .phases import GrainPhase

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .lineage import Entity, Grain

__all__ = ["ReadyQueue"]

_READY = GrainPhase.READY
_Entry = tuple["Grain", int]


class _Pinned:
    """Grains that must be dispatched together and alone (a retried or split batch)."""

    __slots__ = ("entries",)

    def __init__(self, grains: list[Grain]) -> None:
        self.entries = [(g, g.gen) for g in grains]

    def live(self) -> list[Grain]:
        return [g for g, gen in self.entries if g.phase is _READY and g.gen == gen]


class ReadyQueue:
    """FIFO of ready Grains for one Call, cut into batches by a policy."""

    __slots__ = ("_by_parent", "_order", "single_parent")

    def __init__(self, single_parent: bool = False) -> None:
        self.single_parent = single_parent
        self._order: deque[_Entry | _Pinned] = deque()
        self._by_parent: dict[Entity | None, deque[_Entry]] = {}

    def push(self, grain: Grain) -> None:
        """Queue ``grain`` behind everything already queued."""
        entry = (grain, grain.gen)
        self._order.append(entry)
        if self.single_parent:
            self._bucket(grain).append(entry)

    def push_front(self, grains: list[Grain]) -> None:
        """Queue ``grains`` (in order) ahead of everything else, loose."""
        for grain in reversed(grains):
            entry = (grain, grain.gen)
            self._order.appendleft(entry)
            if self.single_parent:
                self._bucket(grain).appendleft(entry)

    def _bucket(self, grain: Grain) -> deque[_Entry]:
        """The sibling bucket of ``grain``'s parent (made on first use)."""
        key = grain.entity.parent
        bucket = self._by_parent.get(key)
        if bucket is None:
            bucket = self._by_parent[key] = deque()
        return bucket

    def pin(self, grains: list[Grain], *, front: bool) -> None:
        """Queue ``grains`` as one batch of their own, at the front or the back."""
        group = _Pinned(grains)
        if front:
            self._order.appendleft(group)
        else:
            self._order.append(group)

    def head(self) -> Grain | None:
        """The oldest live Grain (None when empty); dead entries in front are dropped."""
        order = self._order
        while order:
            entry = order[0]
            if isinstance(entry, _Pinned):
                live = entry.live()
                if live:
                    return live[0]
            else:
                grain, gen = entry
                if grain.phase is _READY and grain.gen == gen:
                    return grain
            order.popleft()
        return None

    def head_seq(self) -> int | None:
        """The queue sequence number of the oldest live entry (None when empty)."""
        grain = self.head()
        return None if grain is None else grain.seq

    def take(self, batch_size: int) -> list[Grain]:
        """Remove and return the next batch (at most ``batch_size`` Grains)."""
        order = self._order
        batch: list[Grain] = []
        while order and len(batch) < batch_size:
            entry = order[0]
            if isinstance(entry, _Pinned):
                if batch:
                    break
                order.popleft()
                live = entry.live()
                if live:
                    return live
                continue
            grain, gen = entry
            if grain.phase is not _READY or grain.gen != gen:
                order.popleft()
                continue
            if self.single_parent:
                return self._take_siblings(grain.entity.parent, batch_size)
            order.popleft()
            batch.append(grain)
        return batch

    def _take_siblings(self, parent: Entity | None, batch_size: int) -> list[Grain]:
        bucket = self._by_parent[parent]
        batch: list[Grain] = []
        while bucket and len(batch) < batch_size:
            grain, gen = bucket.popleft()
            if grain.phase is _READY and grain.gen == gen:
                batch.append(grain)
        if not bucket:
            del self._by_parent[parent]
        return batch

    def __len__(self) -> int:
        """Entries held, including dead ones not yet discarded (an upper bound)."""
        return len(self._order)

    # -- inspection (for ``Core.validate``) -------------------------------------------
    def entries(self) -> Iterator[_Entry]:
        """Every (Grain, generation) entry held, dead or alive, in queue order."""
        for entry in self._order:
            if isinstance(entry, _Pinned):
                yield from entry.entries
            else:
                yield entry

    def live_grains(self) -> list[Grain]:
        """Grains of live entries (READY under the generation they were queued with)."""
        return [g for g, gen in self.entries() if g.phase is _READY and g.gen == gen]

    def sibling_buckets_agree(self) -> bool:
        """``single_parent``: the sibling buckets hold the same live Grains as the FIFO."""
        if not self.single_parent:
            return True
        bucketed = [
            g
            for bucket in self._by_parent.values()
            for g, gen in bucket
            if g.phase is _READY and g.gen == gen
        ]
        loose = [
            e[0]
            for e in self._order
            if not isinstance(e, _Pinned) and e[0].phase is _READY and e[0].gen == e[1]
        ]
        return sorted(map(id, bucketed)) == sorted(map(id, loose))

    def discard_dead(self, parent: Entity | None) -> None:
        """Forget ``parent``'s sibling bucket if none of its Grains is still ready."""
        bucket = self._by_parent.get(parent)
        if bucket is not None and not any(g.phase is _READY and g.gen == gen for g, gen in bucket):
            del self._by_parent[parent]
