"""On Ray the driver holds what is in flight: finished microbatches leave no value
boxes, row references or lineage behind (live objects counted by type)."""

from __future__ import annotations

from collections import Counter

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.execution.remote_values import Box, RemoteValue
from airflow_provider_rayorch.rayorch.runtime.lineage import Entity
from airflow_provider_rayorch.rayorch.runtime.state import Microbatch
from benchmarks.expand_reduce import PAGES_PER_SOURCE, Tiny, expected
from tests.live_objects import count_live

pytestmark = pytest.mark.usefixtures("no_actors_left")

DRIVER_TYPES = (Box, RemoteValue, Microbatch, Entity)
N, BATCH, ACTIVE = 20_000, 500, 2


def live(baseline: Counter[str] | None = None) -> Counter[str]:
    """Live DRIVER_TYPES objects by type name, beyond ``baseline`` (those other tests of the
    session may have left)."""
    return count_live(DRIVER_TYPES, baseline)


def test_streamed_microbatches_leave_no_references_in_the_driver() -> None:
    # in flight: ACTIVE microbatches of BATCH sources and their pages, one row
    # reference per Item of each (a source's value and its joined output, a page's
    # value and its doubled value)
    rows = ACTIVE * BATCH * (1 + PAGES_PER_SOURCE) * 2
    peak: Counter[str] = Counter()
    outputs: list[int] = []
    baseline = live()
    with ro.Executor(Tiny(), backend="ray", progress=False) as executor:
        for mb in executor.stream(
            list(range(N)), input_batch_size=BATCH, max_active_input_batches=ACTIVE
        ):
            outputs += mb.outputs
            if mb.index % 5 == 0:
                del mb
                peak |= live(baseline)
        after = live(baseline)
    print(f"peak while streaming: {dict(peak)}; after the run: {dict(after)}")
    assert outputs == expected(N)
    assert peak["Microbatch"] <= ACTIVE + 1, peak
    assert peak["RemoteValue"] <= rows, peak
    assert peak["Box"] <= rows, peak
    assert after == Counter(), f"left in the driver after the run: {dict(after)}"
