"""ReadyQueue: FIFO order, lazy deletion, pinned groups and sibling batching."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from typing import Any

import pytest

from airflow_provider_rayorch.rayorch.runtime.phases import GrainPhase
from airflow_provider_rayorch.rayorch.runtime.queues import ReadyQueue

R, F, D, S = GrainPhase.READY, GrainPhase.IN_FLIGHT, GrainPhase.DONE, GrainPhase.SUPPRESSED
_seq = count(1)


@dataclass(eq=False)
class Ent:
    parent: Any = None


@dataclass(eq=False)
class G:
    """The fields of a Grain a ReadyQueue reads."""

    name: str
    parent: Any = None
    phase: GrainPhase = R
    gen: int = 0
    seq: int = field(default_factory=lambda: next(_seq))

    def __post_init__(self) -> None:
        self.entity = Ent(self.parent)

    def __repr__(self) -> str:
        return self.name


def names(grains: list[Any]) -> list[str]:
    return [g.name for g in grains]


def take(q: ReadyQueue, n: int) -> list[str]:
    """Take a batch and dispatch it, as the core does (its entries die)."""
    batch = q.take(n)
    for g in batch:
        g.phase = F
        g.gen += 1
    return names(batch)


def grains(spec: str, parent: Any = None) -> list[G]:
    return [G(n, parent) for n in spec]


@pytest.fixture(params=[False, True], ids=["any_parent", "single_parent"])
def single(request: pytest.FixtureRequest) -> bool:
    return request.param


def test_fifo_cut_into_batches(single: bool) -> None:
    q = ReadyQueue(single)
    for g in grains("abcde"):
        q.push(g)
    assert take(q, 2) == ["a", "b"]
    assert take(q, 2) == ["c", "d"]
    assert take(q, 2) == ["e"]
    assert q.take(2) == []
    assert q.head_seq() is None


def test_dead_entries_are_skipped_lazily(single: bool) -> None:
    q = ReadyQueue(single)
    a, b, c = grains("abc")
    for g in (a, b, c):
        q.push(g)
    b.phase = S  # suppressed while queued
    assert len(q) == 3  # an upper bound: dead entries stay until met
    assert take(q, 5) == ["a", "c"]


def test_an_entry_of_an_older_generation_is_dead(single: bool) -> None:
    q = ReadyQueue(single)
    a, b = grains("ab")
    q.push(a)
    q.push(b)
    a.gen = 1  # dispatched and re-queued since: the first entry is stale
    q.push(a)
    assert take(q, 5) == ["b", "a"]


def test_push_front_goes_ahead_in_order(single: bool) -> None:
    q = ReadyQueue(single)
    a, b, c, d = grains("abcd")
    q.push(c)
    q.push(d)
    q.push_front([a, b])
    assert take(q, 3) == ["a", "b", "c"]


def test_pinned_front_is_taken_alone(single: bool) -> None:
    q = ReadyQueue(single)
    a, b, c, d = grains("abcd")
    q.push(c)
    q.push(d)
    q.pin([a, b], front=True)
    assert take(q, 10) == ["a", "b"]
    assert take(q, 10) == ["c", "d"]


def test_pinned_back_is_not_merged_with_loose_entries(single: bool) -> None:
    q = ReadyQueue(single)
    a, b, c, d = grains("abcd")
    q.push(a)
    q.pin([b, c], front=False)
    q.push(d)
    if single:
        # siblings are taken by parent: d (a's sibling) joins a past the pinned group
        assert take(q, 10) == ["a", "d"]
    else:
        assert take(q, 10) == ["a"]  # stops at the pinned group
    assert take(q, 10) == ["b", "c"]
    assert take(q, 10) == ([] if single else ["d"])


def test_pinned_group_keeps_only_live_members(single: bool) -> None:
    q = ReadyQueue(single)
    a, b, c = grains("abc")
    q.pin([a, b], front=True)
    q.push(c)
    a.phase = S
    assert take(q, 10) == ["b"]
    q.pin([a], front=True)  # all dead: skipped entirely
    assert take(q, 10) == ["c"]


def test_head_seq_is_the_oldest_live_entry(single: bool) -> None:
    q = ReadyQueue(single)
    a, b = grains("ab")
    q.push(a)
    q.push(b)
    assert q.head_seq() == a.seq
    a.phase = F
    assert q.head_seq() == b.seq
    q.pin([a], front=True)  # a's pinned entry is dead (a is in flight)
    assert q.head_seq() == b.seq


def test_single_parent_takes_siblings_of_the_oldest_parent() -> None:
    p1, p2 = object(), object()
    q = ReadyQueue(single_parent=True)
    a1, b2, c1, d2, e1 = G("a1", p1), G("b2", p2), G("c1", p1), G("d2", p2), G("e1", p1)
    for g in (a1, b2, c1, d2, e1):
        q.push(g)
    assert take(q, 2) == ["a1", "c1"]
    assert take(q, 2) == ["b2", "d2"]
    assert take(q, 2) == ["e1"]
    assert q.take(2) == []
    assert not q._by_parent


def test_single_parent_push_front_keeps_sibling_order() -> None:
    p1, p2 = object(), object()
    q = ReadyQueue(single_parent=True)
    a, b, c = G("a", p1), G("b", p1), G("c", p2)
    q.push(c)
    q.push(b)
    q.push_front([a])
    assert take(q, 5) == ["a", "b"]
    assert take(q, 5) == ["c"]


def test_discard_dead_forgets_a_bucket_with_no_ready_grain() -> None:
    p1 = object()
    q = ReadyQueue(single_parent=True)
    a, b = G("a", p1), G("b", p1)
    q.push(a)
    q.push(b)
    q.discard_dead(p1)
    assert p1 in q._by_parent  # still live
    a.phase = b.phase = S
    q.discard_dead(p1)
    assert p1 not in q._by_parent
    q.discard_dead(object())  # unknown parent: nothing to do
    assert q.take(5) == []
