"""The isolation-cost benchmark compares the engine with the rule it replaced."""

from __future__ import annotations

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.runtime import core as core_module
from benchmarks import isolation_cost


def test_the_blame_variant_fails_the_raising_batch_and_isolate_fails_only_the_raiser() -> None:
    report = isolation_cost.main(
        ["--backend", "local", "--docs", "40", "--pages", "8", "--every", "10", "--rounds", "2"]
    )
    assert report["poisoned_docs"] == 4
    isolate, blame = report["isolate"], report["blame"]
    assert isolate["present"] == [36, 36]  # only the 4 raising documents
    assert blame["present"] == [32, 32]  # each raising batch (2 documents) fails whole
    # isolating costs the splits: a batch of 16 halves down to the raiser (16+8+4+2 pages)
    for key, extra in (("page_dispatches", 30), ("page_batches", 8)):
        pairs = zip(isolate[key], blame[key], strict=True)
        assert [i - b for i, b in pairs] == [4 * extra] * 2, key


def test_the_blame_variant_is_undone_after_its_run() -> None:
    original = core_module.decide_after_exception
    with isolation_cost.variant("blame"):
        assert core_module.decide_after_exception is isolation_cost.blame_batch
    assert core_module.decide_after_exception is original


def test_blame_batch_retries_fresh_grains_then_fails_the_spent_ones() -> None:
    class G:
        def __init__(self, retries: int) -> None:
            self.retries = retries

    fresh, spent = G(0), G(1)
    decision = isolation_cost.blame_batch(ro.RecoveryPolicy(), [fresh, spent])  # type: ignore[list-item]
    assert decision.pinned_front == [[fresh]]
    assert decision.fail == [spent]
    assert fresh.retries == 1
