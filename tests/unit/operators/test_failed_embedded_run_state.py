"""A failed embedded run reads failed, with its cause, on every surface.

The embedded driver fails before any commit (only the plan is stored): the report's
data and the runs page's state must say failed and why, never running with every
microbatch pending.
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from unittest import mock

import pytest

from airflow_provider_rayorch.exceptions import RayOrchJobFailed
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator
from airflow_provider_rayorch.reports import read_run_state
from airflow_provider_rayorch.reports._data import load_run
from airflow_provider_rayorch.runs.store import RunStore

pytestmark = pytest.mark.timeout(120)

CAUSE = "cannot pickle '_thread.lock' object"


def _context() -> dict[str, object]:
    ti = mock.MagicMock(
        dag_id="dag", run_id="manual__1", task_id="task", map_index=-1, try_number=1
    )
    return {"ti": ti, "task_state_store": {}, "outlet_events": mock.MagicMock()}


@pytest.fixture
def failed_run(tmp_path, monkeypatch) -> tuple[RunStore, str]:
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    op = RayOrchOperator(
        task_id="task",
        pipeline="tests.unit.operators.driver_failures:FailsInTheDriver",
        pipeline_kwargs={"planner_pid": os.getpid()},
        sources=[1, 2, 3],
        input_batch_size=2,
        run_store=str(tmp_path),
    )
    with pytest.raises(RayOrchJobFailed, match="cannot pickle"):
        op.execute(_context())
    return RunStore(str(tmp_path)), str(op._prepared_run_id)


def test_the_report_data_says_failed_with_the_cause(failed_run) -> None:
    store, run_id = failed_run
    view = load_run(store, run_id)
    assert view.state == "failed"
    assert CAUSE in (view.state_message or "")
    assert [mb.state for mb in view.microbatches] == ["not_run", "not_run"]


def test_the_runs_page_says_failed_with_the_cause(failed_run) -> None:
    from airflow_provider_rayorch.plugins.app import _state

    store, run_id = failed_run
    run = SimpleNamespace(store_uri=store.uri, conn_id=None, rayorch_run_id=run_id)
    for state in (_state(run), read_run_state(store, run_id)):
        assert state.state == "failed"
        assert state.job_status == "FAILED"
        assert CAUSE in (state.message or "")
