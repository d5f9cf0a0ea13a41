"""A run holds what is in flight, not what it finished: live engine objects are
counted (``gc.get_objects()`` by type) while sources stream and after the run."""

from __future__ import annotations

from collections import Counter

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.runtime.lineage import Entity, Grain
from airflow_provider_rayorch.rayorch.runtime.state import Microbatch
from benchmarks.expand_reduce import PAGES_PER_SOURCE, Tiny
from tests.live_objects import count_live

ENGINE_TYPES = (Microbatch, Entity, Grain)
BATCH, ACTIVE = 500, 2


def live(baseline: Counter[str] | None = None) -> Counter[str]:
    """Live ENGINE_TYPES objects by type name, beyond ``baseline`` (those other tests of the
    session may have left)."""
    return count_live(ENGINE_TYPES, baseline)


def stream_and_discard(
    executor: ro.Executor, n: int, baseline: Counter[str]
) -> tuple[Counter[str], int]:
    """Stream ``n`` sources, dropping each microbatch at once; the most live engine
    objects seen at a sample of yields, and the sources seen."""
    peak: Counter[str] = Counter()
    seen = 0
    every = max(n // BATCH // 8, 1)
    for mb in executor.stream(
        list(range(n)), input_batch_size=BATCH, max_active_input_batches=ACTIVE
    ):
        seen += mb.count
        if mb.index % every == 0:
            del mb
            peak |= live(baseline)
    return peak, seen


def test_streaming_holds_only_the_microbatches_in_flight() -> None:
    # in flight: ACTIVE microbatches, each with BATCH sources and their pages
    bound = ACTIVE * BATCH * (1 + PAGES_PER_SOURCE)
    baseline = live()
    with ro.Executor(Tiny(), backend="local", progress=False) as executor:
        small, seen_small = stream_and_discard(executor, 10_000, baseline)
        large, seen_large = stream_and_discard(executor, 100_000, baseline)
        after = live(baseline)
    assert (seen_small, seen_large) == (10_000, 100_000)
    print(f"10k: {dict(small)}  100k: {dict(large)}  after: {dict(after)}")
    assert large["Microbatch"] <= ACTIVE + 1, large
    assert large["Entity"] <= bound, large
    assert large["Grain"] <= bound, large
    assert large["Microbatch"] <= small["Microbatch"] + 1
    assert after == Counter(), f"engine objects left after the run: {dict(after)}"


def test_run_result_keeps_outputs_and_counters_only() -> None:
    baseline = live()
    with ro.Executor(Tiny(), backend="local", progress=False) as executor:
        result = executor.run(list(range(20_000)), input_batch_size=BATCH)
        left = live(baseline)
    assert result.outputs[:4] == [0, 1, 4, 3]
    assert len(result.outputs) == 20_000
    assert result.lineage()["sources"]["present"] == 20_000
    assert [b["count"] for b in result.input_batches] == [BATCH] * (20_000 // BATCH)
    assert left == Counter(), f"engine objects kept by the run's result: {dict(left)}"
