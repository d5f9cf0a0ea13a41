"""The driver's progress ticker prints only what the driver thread published: it never
reads the engine's core from its own thread, so a progress line cannot race the
dispatch loop or show a negative delta."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.runs import driver

from . import pipelines
from .test_driver import _store_local_plan

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)


def _tick_on_another_thread(ticker: Any) -> str:
    out: list[str] = []
    thread = threading.Thread(target=lambda: out.append(ticker.tick()))
    thread.start()
    thread.join()
    return out[0]


def test_the_ticker_prints_what_the_driver_thread_published(capsys) -> None:
    ticker = driver.ProgressTicker(total=6)
    ticker.observe(15)
    assert "15 grains dispatched (+15 " in _tick_on_another_thread(ticker)
    ticker.committed()
    ticker.committed()
    ticker.observe(60)
    line = _tick_on_another_thread(ticker)
    assert line.startswith("running: 2/6 microbatches committed, 60 grains dispatched (+45 ")
    assert line in capsys.readouterr().out
    ticker.observe(50)  # a smaller count (a new stream) never makes a negative delta
    again = _tick_on_another_thread(ticker)
    assert "(+0 " in again
    assert "-" not in again.split("(")[1].split(" ")[0]


def test_the_ticker_thread_never_calls_into_the_executor(tmp_path: Path, monkeypatch) -> None:
    """The engine's first microbatch waits until the ticker printed a line; meanwhile
    every call into the executor must come from the driver thread."""
    callers: list[str] = []
    for name in ("call_metrics", "timeline"):
        real = getattr(ro.Executor, name)

        def spy(self: Any, _real: Any = real) -> Any:
            callers.append(threading.current_thread().name)
            return _real(self)

        monkeypatch.setattr(ro.Executor, name, spy)
    said = driver._say

    def say(line: str) -> None:
        said(line)
        if line.startswith("running:"):
            pipelines.TICKED.set()

    pipelines.TICKED.clear()
    monkeypatch.setattr(driver, "_say", say)
    monkeypatch.setattr(driver, "PROGRESS_EVERY_S", 0.0)
    spec = "tests.unit.runs.pipelines:Slow"
    store = _store_local_plan(tmp_path, spec, list(range(4)), input_batch_size=2)
    driver.run_plan(store, "run")
    assert pipelines.TICKED.is_set()
    main = threading.current_thread().name
    assert callers, "the driver reads the executor's metrics on its own thread"
    assert set(callers) == {main}, callers


def test_the_ticker_reads_the_published_counter_between_commits() -> None:
    """With the engine's published counter, a line between two commits is live."""
    published = [0]
    ticker = driver.ProgressTicker(total=3, count=lambda: published[0])
    published[0] = 40
    assert "40 grains dispatched (+40 " in _tick_on_another_thread(ticker)
    published[0] = 95  # no commit since: the count still moves
    assert "95 grains dispatched (+55 " in _tick_on_another_thread(ticker)


def test_the_executor_publishes_grains_dispatched_as_it_runs(tmp_path: Path) -> None:
    """``Executor.grains_dispatched`` counts over every Call, as call_metrics sums."""
    with ro.Executor(pipelines.Weirdo(), backend="local") as executor:
        assert executor.grains_dispatched() == 0
        executor.run(list(range(4)), input_batch_size=2)
        total = sum(c["grains_dispatched"] for c in executor.call_metrics())
        assert total > 0
        assert executor.grains_dispatched() == total
