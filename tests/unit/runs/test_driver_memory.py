"""The job's driver holds what is in flight: at each commit, and after the run, the
live engine objects (``gc.get_objects()`` by type) do not grow with the run."""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.execution.result import MicrobatchResult
from airflow_provider_rayorch.rayorch.runtime.lineage import Entity
from airflow_provider_rayorch.rayorch.runtime.state import Microbatch
from airflow_provider_rayorch.runs import driver, live_reports, pipeline_load
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore
from tests.live_objects import count_live

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.timeout(300)

KINDS = (Microbatch, MicrobatchResult, Entity)
N, BATCH, ACTIVE = 12_000, 300, 2


class Pages:
    def run(self, xs: list[int]) -> list[list[int]]:
        return [list(range(x % 3)) for x in xs]


class Total:
    def run(self, groups: list[list[int]], xs: list[int]) -> list[int]:
        return [x + sum(g) for g, x in zip(groups, xs, strict=True)]


class PagesAndTotal(ro.Pipeline):
    def __init__(self) -> None:
        self.pages = ro.RayModule(Pages).ray_options(batch_size=64)
        self.total = ro.RayModule(Total).ray_options(batch_size=64)

    def forward(self, x: Any) -> Any:
        return self.total(ro.F.reduce(ro.F.expand(self.pages(x), domain="page")), x)


def live(baseline: Counter[str] | None = None) -> Counter[str]:
    """Live KINDS objects by type name, beyond ``baseline`` (those other tests of the
    session may have left)."""
    return count_live(KINDS, baseline)


def test_the_driver_keeps_no_committed_microbatch(tmp_path) -> None:
    spec = f"{__name__}:PagesAndTotal"
    store = RunStore(str(tmp_path))
    store.write_plan(
        PlanRecord(
            run_id="run",
            pipeline=spec,
            fingerprint=PagesAndTotal().compile().fingerprint,
            sources=list(range(N)),
            backend="local",
            input_batch_size=BATCH,
            max_active_input_batches=ACTIVE,
        )
    )
    baseline = live()
    peak: Counter[str] = Counter()
    commits = 0

    def sample() -> None:
        nonlocal peak, commits
        commits += 1
        if commits % 8 == 0:
            peak |= live(baseline)

    summary = driver.run_plan(store, "run", on_commit=sample)
    after = live(baseline)
    print(f"peak at commits: {dict(peak)}; after the run: {dict(after)}")
    assert summary["sources"]["present"] == N
    assert commits == N // BATCH
    # the microbatch being committed, and those the core holds active
    assert peak["Microbatch"] <= ACTIVE + 1, peak
    assert peak["MicrobatchResult"] <= 1, peak
    assert peak["Entity"] <= ACTIVE * BATCH * 3, peak
    assert after == Counter(), f"left after the run: {dict(after)}"


def test_the_driver_keeps_the_engines_timeline_to_what_reports_read(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keep = 40
    monkeypatch.setattr(live_reports, "REPORT_TIMELINE", keep)
    store = RunStore(str(tmp_path))
    store.write_plan(
        PlanRecord(
            run_id="run",
            pipeline=f"{__name__}:PagesAndTotal",
            fingerprint=PagesAndTotal().compile().fingerprint,
            sources=list(range(3000)),
            backend="local",
            input_batch_size=BATCH,
            max_active_input_batches=ACTIVE,
        )
    )
    executors: list[Any] = []
    opened = pipeline_load.plan_executor

    @contextlib.contextmanager
    def recording(*args: Any, **kwargs: Any) -> Iterator[Any]:
        with opened(*args, **kwargs) as executor:
            executors.append(executor)
            yield executor

    monkeypatch.setattr(driver, "plan_executor", recording)
    lengths: list[int] = []
    driver.run_plan(store, "run", on_commit=lambda: lengths.append(len(executors[0].timeline())))
    assert len(lengths) == 3000 // BATCH
    assert max(lengths) < 2 * keep + 60, lengths  # a commit adds about 30 records
    assert min(lengths[2:]) >= keep, lengths  # the latest ones are kept
