"""The report writer stores through the run store's I/O: it keeps what it wrote in
memory, and a store it cannot write raises ``StoreError`` naming the store."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.reports import read_report_data, write_run_report
from airflow_provider_rayorch.runs.store import RunStore

from .conftest import RUN, make_run, make_timeline
from .counting_fs import counting

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)


def test_writing_a_report_never_reads_back_the_data_it_wrote(tmp_path: Path) -> None:
    store = make_run(tmp_path / "runs")
    handler = counting(store)
    timeline, calls, timings = make_timeline()
    write_run_report(store, RUN, timeline, calls, microbatches=timings)
    assert not [p for p in handler.paths if p.endswith(("report.json", "report.html"))]
    stored = read_report_data(store, RUN)
    assert stored is not None
    assert stored.timings is not None
    assert sorted(t.index for t in stored.timings) == sorted(int(t["index"]) for t in timings)


def test_a_report_over_stored_data_reads_it_once(tmp_path: Path) -> None:
    store = make_run(tmp_path / "runs")
    timeline, calls, timings = make_timeline()
    write_run_report(store, RUN, timeline, calls, microbatches=timings)
    handler = counting(store)
    write_run_report(store, RUN)  # after a repair: the stored measurements stay
    assert [p for p in handler.paths if p.endswith("report.json")] == [
        str(tmp_path / "runs" / RUN / "report.json")
    ]


def test_a_report_the_store_cannot_hold_raises_store_error_naming_it(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs"))
    (tmp_path / "runs" / "blocked").parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "runs" / "blocked").write_text("a file where the run's folder must be")
    timeline, calls, timings = make_timeline()
    with pytest.raises(StoreError, match="cannot write to the run store") as caught:
        write_run_report(store, "blocked", timeline, calls, microbatches=timings)
    assert "run_store" in str(caught.value)
