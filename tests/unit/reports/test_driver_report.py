"""The report the driver writes for a small real run (reference executor, no Ray).

The example pipeline's UDFs take microseconds per batch: the report must show those
microseconds and a non-zero share, not "0" and "0%".
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from airflow_provider_rayorch import job
from airflow_provider_rayorch.reports import read_run_report
from airflow_provider_rayorch.runs import driver, pipeline_load
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

from .test_report import parse

pytestmark = pytest.mark.timeout(120)

EXAMPLES = Path(__file__).parents[3] / "dags_examples"
SPEC = "rayorch_example_pipelines:TextDocPipeline"


@pytest.fixture
def examples_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", [str(EXAMPLES), *sys.path])


def _planned(root: Path, docs: list[str]) -> RunStore:
    """A run store holding run ``run``'s plan: the example pipeline over ``docs``."""
    store = RunStore(str(root))
    fingerprint = pipeline_load.import_factory(SPEC)().compile().fingerprint
    plan = PlanRecord(
        run_id="run",
        pipeline=SPEC,
        fingerprint=str(fingerprint),
        sources=docs,
        input_batch_size=2,
        backend="local",
    )
    store.write_plan(plan)
    return store


@pytest.mark.usefixtures("examples_importable")
def test_small_run_report_shows_microseconds_of_busy_time(tmp_path: Path) -> None:
    store = _planned(tmp_path, ["a b\fc d", "e\ff\fg", "h i j", "k\fl", "m"])
    assert driver.run_plan(store, "run", report=job.write_report)["state"] == "success"
    html = read_run_report(store, "run")
    assert html is not None
    page = parse(html)
    head, *rows = page.rows["calls-table"]
    busy = next(i for i, h in enumerate(head) if h.startswith("busy"))
    util = head.index("utilization")
    assert {r[0] for r in rows} == {"split", "recognize", "assemble"}
    for row in rows:
        assert row[busy] != "0 s", row  # µs of UDF time are shown, with their unit
        assert row[busy].endswith(("µs", "ms", " s")), row
        assert row[util] not in ("0%", ""), row
    assert 'data-state="success"' in html


@pytest.mark.usefixtures("examples_importable")
def test_kept_report_of_a_finished_run_does_not_say_running(tmp_path: Path) -> None:
    """The submit records RUNNING, the driver
    runs and writes its report; the kept report (and the state) say success, as the
    driver recorded it."""
    from airflow_provider_rayorch.common.liveness import record_submitted
    from airflow_provider_rayorch.reports import read_run_state

    store = _planned(tmp_path, ["a b", "c\fd", "e"])
    job_id = "rayorch-d-t-0123-try1"
    record_submitted(store, "run", job_id)  # as the submit does
    assert driver.run_plan(store, "run", report=job.write_report)["state"] == "success"
    html = read_run_report(store, "run")
    assert html is not None
    assert 'data-state="success"' in html
    assert "RUNNING" not in html
    assert f"{job_id} submitted" not in html
    state = read_run_state(store, "run")
    assert (state.state, state.job_status) == ("success", "SUCCEEDED")
    assert state.message == "3 sources: 3 present, 0 dropped, 0 failed, 0 suppressed (success)"
