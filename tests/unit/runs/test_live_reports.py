"""The live report is written on its own thread: a slow report never holds a commit."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_rayorch.runs import driver
from tests.unit.runs.plans import write_fake_plan

if TYPE_CHECKING:
    from airflow_provider_rayorch.runs.store import RunStore

pytestmark = pytest.mark.timeout(120)

WATCHDOG_S = 30


def test_a_slow_live_report_does_not_hold_the_next_commit(
    tmp_path: Any, fake_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report stuck on a slow store (it waits until every microbatch committed): the
    commit loop still commits every microbatch, and the final report is written."""
    store = write_fake_plan(tmp_path, n=9, size=3)
    monkeypatch.setattr(driver, "REPORT_EVERY_S", 0.0)  # a live report after each commit
    for name in ("call_metrics", "timeline"):  # the fake engine measures nothing
        monkeypatch.setattr(fake_engine.FakeExecutor, name, lambda self: [], raising=False)
    release = threading.Event()
    commits: list[int] = []
    reports: list[list[Any] | None] = []

    def slow_report(
        store: RunStore, run_id: str, timeline: Any, calls: Any, *, microbatches: Any
    ) -> str:
        release.wait()  # until the run committed all 3 microbatches
        reports.append(microbatches)
        return "report.html"

    def on_commit() -> None:
        commits.append(1)
        if len(commits) == 3:
            release.set()

    result: dict[str, Any] = {}

    def run() -> None:
        result["summary"] = driver.run_plan(store, "run", report=slow_report, on_commit=on_commit)

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    runner.join(WATCHDOG_S)  # a watchdog: the loop blocked by the report never gets here
    release.set()
    assert not runner.is_alive(), (
        f"the commit loop waited for the live report: {len(commits)} of 3 microbatches "
        "committed while the report was being written"
    )
    runner.join(WATCHDOG_S)
    assert result["summary"]["state"] == "success"
    assert store.committed("run") == frozenset({0, 1, 2})
    # the final report, written last, saw every commit
    assert reports
    assert [t["index"] for t in reports[-1] or []] == [0, 1, 2]
