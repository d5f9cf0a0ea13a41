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
        pytest.param(RP.retry_batch(2), 0, {"pinned_front": "abc"}, id="retry_batch-fresh"),
        pytest.param(RP.retry_batch(2), 2, {"fail": "abc"}, id="retry_batch-spent"),
        pytest.param(RP.retry_tail(1), 0, {"loose_tail": "abc"}, id="retry_tail-fresh"),
        pytest.param(RP.retry_tail(1), 1, {"fail": "abc"}, id="retry_tail-spent"),
        pytest.param(RP.retry_tail(0), 0, {"fail": "abc"}, id="retry_tail-no-retries"),
        pytest.param(RP.isolate_tail(1), 0, {"pinned_tail": ["abc"]}, id="isolate-fresh"),
        pytest.param(RP.isolate_tail(1), 1, {"pinned_tail": ["ab", "c"]}, id="isolate-halves"),
        pytest.param(RP.isolate_tail(0), 0, {"pinned_tail": ["ab", "c"]}, id="isolate-0-retries"),
    ],
)
def test_decide_after_exception(policy: ro.RecoveryPolicy, retries: int, expected: dict) -> None:
    gs = batch("abc", retries)
    decision = decide_after_exception(policy, gs)
    assert not decision.abort
    assert names(decision.pinned_front) == expected.get("pinned_front", "")
    assert names(decision.loose_tail) == expected.get("loose_tail", "")
    assert names(decision.fail) == expected.get("fail", "")
    assert [names(g) for g in decision.pinned_tail] == expected.get("pinned_tail", [])
    assert decision.loose_front == []


def test_isolate_fails_a_lone_spent_grain() -> None:
    decision = decide_after_exception(RP.isolate_tail(1), batch("p", retries=1))
    assert names(decision.fail) == "p"
    assert decision.retried() == []


def test_isolate_tries_a_lone_spent_grain_alone_before_blaming_it() -> None:
    # b's retries are spent, but it raised in company: it runs alone first
    a, b = G("a", retries=0), G("b", retries=1)
    decision = decide_after_exception(RP.isolate_tail(1), [a, b])
    assert [names(g) for g in decision.pinned_tail] == ["a", "b"]
    assert decision.fail == []


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
    assert names(decision.pinned_front) == "ab"
    assert decision.loose_front == []
    assert decision.fail == []
    assert [g.infra for g in gs] == [0, 0]


def test_decision_retried_lists_every_requeued_grain_once() -> None:
    a, b, c, d, e = batch("abcde")
    decision = Decision(pinned_front=[a], pinned_tail=[[b], [c]], loose_front=[d], loose_tail=[e])
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
