"""A run with more microbatches than Airflow's ``[core] max_map_length`` fails clearly
before anything is submitted: at parse time for literal sources, else in ``submit``."""

from __future__ import annotations

from unittest import mock

import pytest

from airflow_provider_rayorch.exceptions import RayOrchJobFailed, RayOrchPermanentError
from airflow_provider_rayorch.hooks.settings import RayOrchSettings
from airflow_provider_rayorch.operators.microbatch import (
    RayOrchSubmitOperator,
    rayorch_microbatch_group,
)
from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.sensors.rayorch import RayOrchRunSensor

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def map_length_4(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__CORE__MAX_MAP_LENGTH", "4")


def _hook(tmp_path):
    hook = mock.MagicMock()
    hook.embedded = False
    hook.is_local_head = False
    hook.settings = RayOrchSettings(address="http://h:8265", run_store=str(tmp_path))
    hook.run_store_uri = str(tmp_path)
    hook.runtime_env.side_effect = lambda override=None: dict(override or {})
    hook.find_active_job.return_value = None
    hook.get_job_info.return_value = None
    return hook


def _context():
    ti = mock.MagicMock(
        dag_id="dag", run_id="manual__1", task_id="submit", map_index=-1, try_number=1
    )
    pushed: dict = {}
    ti.xcom_push.side_effect = lambda key, value: pushed.__setitem__(key, value)
    return {"ti": ti, "task_state_store": None, "outlet_events": mock.MagicMock()}, pushed


def _submit(tmp_path, sources, input_batch_size):
    op = RayOrchSubmitOperator(
        task_id="submit",
        pipeline="fake_pipelines:Square",
        sources=sources,
        input_batch_size=input_batch_size,
    )
    op.__dict__["hook"] = hook = _hook(tmp_path)
    return op, hook


def test_submit_refuses_more_microbatches_than_max_map_length_before_submitting(
    tmp_path, fake_engine, map_length_4
) -> None:
    # a template (as a glob's sources are) cannot be counted at parse time
    op, hook = _submit(tmp_path, "{{ params.rows }}", 2)
    op.sources = list(range(9))  # what the template rendered: 5 microbatches of 2
    ctx, _ = _context()
    with pytest.raises(RayOrchPermanentError) as caught:
        op.execute(ctx)
    message = str(caught.value)
    assert "5 microbatches" in message
    assert "[core] max_map_length = 4" in message
    assert "AIRFLOW__CORE__MAX_MAP_LENGTH" in message
    assert "input_batch_size=3" in message  # the smallest that fits: ceil(9 / 4)
    hook.submit_job.assert_not_called()
    # the run task's error repeats why no job started
    state = plain(RunStore(str(tmp_path)).job_state_record(op._run_id(ctx)))
    assert state is not None
    assert state["job_status"] == "NOT_STARTED"
    assert "max_map_length" in state["message"]
    run = RayOrchRunSensor(  # as the group renders it: the submit pushed no job id
        task_id="run", run_id=op._run_id(ctx), run_store=str(tmp_path), job_id="None"
    )
    run.__dict__["_store_hook"] = hook
    hook.run_store.side_effect = RunStore
    with pytest.raises(RayOrchJobFailed, match=r"never started a Ray job.*max_map_length = 4"):
        run.execute(ctx)
    # the fix the error gives works on the same run: the cleared submit maps 3 microbatches
    op.input_batch_size = 3
    hook.submit_job.return_value = "job-1"
    assert [d["count"] for d in op.execute(_context()[0])] == [3, 3, 3]
    hook.submit_job.assert_called_once()


def test_submit_over_max_map_length_keeps_a_run_a_job_already_ran(
    tmp_path, fake_engine, map_length_4, monkeypatch
) -> None:
    op, hook = _submit(tmp_path, list(range(9)), 3)
    hook.submit_job.return_value = "job-1"
    ctx, _ = _context()
    op.execute(ctx)  # 3 microbatches: submitted
    store = RunStore(str(tmp_path))
    run_id = op._run_id(ctx)
    plan = store.read_plan(run_id)
    monkeypatch.setenv("AIRFLOW__CORE__MAX_MAP_LENGTH", "2")  # lowered before a retry
    with pytest.raises(RayOrchPermanentError, match="3 microbatches"):
        op.execute(_context()[0])
    assert store.read_plan(run_id) == plan
    assert plain(store.job_state_record(run_id))["job_status"] == "RUNNING"
    hook.submit_job.assert_called_once()


def test_submit_maps_exactly_max_map_length_microbatches(
    tmp_path, fake_engine, map_length_4
) -> None:
    op, hook = _submit(tmp_path, list(range(8)), 2)
    hook.submit_job.return_value = "job-1"
    descriptors = op.execute(_context()[0])
    assert [d["index"] for d in descriptors] == [0, 1, 2, 3]
    hook.submit_job.assert_called_once()


def test_group_with_literal_sources_over_max_map_length_fails_at_parse_time(
    map_length_4,
) -> None:
    from airflow.sdk import DAG

    with DAG("too_many_microbatches", schedule=None), pytest.raises(UsageError) as caught:
        rayorch_microbatch_group(
            "ingest",
            pipeline="fake_pipelines:Square",
            sources=list(range(10)),
            input_batch_size=2,
            ray_address="http://h:8265",
        )
    message = str(caught.value)
    assert "5 microbatches" in message
    assert "'ingest'" in message
    assert "AIRFLOW__CORE__MAX_MAP_LENGTH" in message
    assert "input_batch_size=3" in message
