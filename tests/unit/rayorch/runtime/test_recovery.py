"""Recovery decisions for a batch that raised or whose worker was lost."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.program.options import RecoveryKind
from airflow_provider_rayorch.rayorch.runtime.recovery import (
    Decision,
    decide_after_exception,
    decide_after_loss,
)


@dataclass(eq=False)
class G:
    name: str
    retries: int = 0
    infra: int = 0

    def __repr__(self) -> str:
        return self.name


def batch(spec: str, retries: int = 0) -> list[G]:
    return [G(n, retries=retries) for n in spec]


def names(gs: list[G]) -> str:
    return "".join(g.name for g in gs)


RP = ro.RecoveryPolicy


@pytest.mark.parametrize(
    ("policy", "retries", "expected"),
    [
        pytest.param(RP.retry_batch(2), 0, {"pinned_front": ["abc"]}, id="retry_batch-fresh"),
        pytest.param(RP.retry_batch(2), 2, {"pinned_front": ["ab", "c"]}, id="retry_batch-halves"),
        pytest.param(RP.retry_batch(0), 0, {"pinned_front": ["ab", "c"]}, id="retry_batch-0"),
        pytest.param(RP.retry_tail(1), 0, {"loose_tail": "abc"}, id="retry_tail-fresh"),
        pytest.param(RP.retry_tail(1), 1, {"pinned_tail": ["ab", "c"]}, id="retry_tail-halves"),
        pytest.param(RP.retry_tail(0), 0, {"pinned_tail": ["ab", "c"]}, id="retry_tail-0"),
        pytest.param(RP.isolate_tail(1), 0, {"pinned_tail": ["abc"]}, id="isolate-fresh"),
        pytest.param(RP.isolate_tail(1), 1, {"pinned_tail": ["ab", "c"]}, id="isolate-halves"),
        pytest.param(RP.isolate_tail(0), 0, {"pinned_tail": ["ab", "c"]}, id="isolate-0-retries"),
    ],
)
def test_decide_after_exception(policy: ro.RecoveryPolicy, retries: int, expected: dict) -> None:
    gs = batch("abc", retries)
    decision = decide_after_exception(policy, gs)
    assert not decision.abort
    assert [names(g) for g in decision.pinned_front] == expected.get("pinned_front", [])
    assert names(decision.loose_tail) == expected.get("loose_tail", "")
    assert decision.fail == []  # a batch of several rows never fails: it is split
    assert [names(g) for g in decision.pinned_tail] == expected.get("pinned_tail", [])
    assert decision.loose_front == []


RETRYING = [
    pytest.param(RP.retry_batch(1), id="retry_batch"),
    pytest.param(RP.retry_tail(1), id="retry_tail"),
    pytest.param(RP.isolate_tail(1), id="isolate_tail"),
]


@pytest.mark.parametrize("policy", RETRYING)
def test_a_spent_grain_that_raised_alone_fails(policy: ro.RecoveryPolicy) -> None:
    decision = decide_after_exception(policy, batch("p", retries=1))
    assert names(decision.fail) == "p"
    assert decision.retried() == []


@pytest.mark.parametrize("policy", RETRYING)
def test_a_spent_grain_tries_alone_before_it_is_blamed(policy: ro.RecoveryPolicy) -> None:
    # b's retries are spent, but it raised in company: it runs alone first
    a, b = G("a", retries=0), G("b", retries=1)
    decision = decide_after_exception(policy, [a, b])
    assert decision.fail == []
    pinned = decision.pinned_front + decision.pinned_tail
    assert [b] in pinned
    assert sorted(names(decision.retried())) == ["a", "b"]


@pytest.mark.parametrize("policy", RETRYING)
def test_a_lone_survivor_of_a_shared_batch_is_tried_alone_before_it_fails(
    policy: ro.RecoveryPolicy,
) -> None:
    """One live Grain left of a batch whose run() saw other rows (withdrawn in
    flight): the exception may be theirs, so it runs alone before it can FAIL."""
    decision = decide_after_exception(policy, batch("p", retries=1), alone=False)
    assert decision.fail == []
    assert [names(g) for g in decision.pinned_front + decision.pinned_tail] == ["p"]


@pytest.mark.parametrize("policy", RETRYING)
def test_a_stage_that_always_raises_ends_with_every_row_failing_alone(
    policy: ro.RecoveryPolicy,
) -> None:
    """Each batch splits until every row raised alone: a binary tree over the rows
    after the batch's one retry, so at most 2n batches for n rows."""
    gs = batch("abcdefg")
    queue, dispatches, failed = [gs], 0, []
    while queue:
        group = queue.pop(0)
        dispatches += 1
        decision = decide_after_exception(policy, group)
        failed += decision.fail
        queue += [*decision.pinned_front, *decision.pinned_tail]
        if decision.loose_tail:
            queue.append(decision.loose_tail)
    assert sorted(names(failed)) == list("abcdefg")
    assert dispatches == 2 * len(gs)  # the try, its retry, then 2n - 2 splits


def test_retries_are_counted_per_grain_only_when_retried() -> None:
    a, b = G("a", retries=0), G("b", retries=1)
    decide_after_exception(RP.retry_tail(1), [a, b])
    assert (a.retries, b.retries) == (1, 1)


def test_abort_decides_nothing_else() -> None:
    gs = batch("ab")
    decision = decide_after_exception(RP.abort(), gs)
    assert decision.abort
    assert decision.retried() == []
    assert decision.fail == []
    assert [g.retries for g in gs] == [0, 0]


@pytest.mark.parametrize(
    ("infra", "budget", "front", "fail"),
    [
        pytest.param(0, 3, "ab", "", id="within-budget"),
        pytest.param(2, 3, "ab", "", id="last-allowed"),
        pytest.param(3, 3, "", "ab", id="exhausted"),
        pytest.param(0, 0, "", "ab", id="no-infra-retries"),
    ],
)
def test_decide_after_loss(infra: int, budget: int, front: str, fail: str) -> None:
    gs = [G("a", infra=infra), G("b", infra=infra)]
    decision = decide_after_loss(RP.retry_batch(infra_retries=budget), gs)
    assert names(decision.loose_front) == front
    assert names(decision.fail) == fail
    assert [g.infra for g in gs] == [infra + 1] * 2
    assert [g.retries for g in gs] == [0, 0]  # losses never spend exception retries


def test_a_loss_on_purpose_keeps_each_batch_as_it_was() -> None:
    """A worker killed on purpose (``charged=False``, ``keep_batch=True``): the batch
    runs again at once as the batch it was, never merged with other Grains."""
    gs = [G("a"), G("b")]
    decision = decide_after_loss(
        RP.retry_batch(infra_retries=1), gs, charged=False, keep_batch=True
    )
    assert [names(g) for g in decision.pinned_front] == ["ab"]
    assert decision.loose_front == []
    assert decision.fail == []
    assert [g.infra for g in gs] == [0, 0]


def test_decision_retried_lists_every_requeued_grain_once() -> None:
    a, b, c, d, e = batch("abcde")
    decision = Decision(pinned_front=[[a]], pinned_tail=[[b], [c]], loose_front=[d], loose_tail=[e])
    assert sorted(names(decision.retried())) == list("abcde")


@pytest.mark.parametrize(
    ("factory", "kind", "retries"),
    [
        pytest.param(RP.abort, RecoveryKind.ABORT, 0, id="abort"),
        pytest.param(RP.retry_batch, RecoveryKind.RETRY_BATCH, 1, id="retry_batch"),
        pytest.param(RP.retry_tail, RecoveryKind.RETRY_TAIL, 1, id="retry_tail"),
        pytest.param(RP.isolate_tail, RecoveryKind.ISOLATE_TAIL, 1, id="isolate_tail"),
    ],
)
def test_policy_defaults(factory, kind: RecoveryKind, retries: int) -> None:  # type: ignore[no-untyped-def]
    policy = factory()
    assert (policy.kind, policy.max_retries, policy.infra_retries) == (kind, retries, 3)


def test_default_policy_is_retry_batch_once_with_three_infra_retries() -> None:
    assert RP() == RP.retry_batch(max_retries=1, infra_retries=3)
    assert RP().describe() == "retry_batch(max_retries=1, infra_retries=3)"


@pytest.mark.parametrize("bad", [-1, True, 1.5, "2"])
def test_policy_rejects_bad_counts(bad: object) -> None:
    with pytest.raises(ValueError, match="max_retries"):
        RP.retry_batch(max_retries=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="infra_retries"):
        RP.retry_tail(infra_retries=bad)  # type: ignore[arg-type]
