"""The operator and the run sensor read a run manifest by one rule: a manifest's own
``job_status`` is kept (common.states.with_job_status), never overwritten."""

from __future__ import annotations

from unittest import mock

import pytest
from repair_plans import write_finished_run

pytestmark = pytest.mark.timeout(60)


def _operator(tmp_path):
    from airflow_provider_rayorch.hooks.settings import RayOrchSettings
    from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

    hook = mock.MagicMock(embedded=False, run_store_uri=str(tmp_path), is_local_head=False)
    hook.settings = RayOrchSettings(address="http://h:8265", run_store=str(tmp_path))
    op = RayOrchOperator(task_id="t", pipeline="fake_pipelines:Square", sources=[1, 2])
    op.__dict__["hook"] = hook
    return op


@pytest.mark.parametrize("job_status", ["SUCCEEDED", "STOPPED"])
def test_operator_and_run_sensor_agree_on_a_manifest(tmp_path, fake_engine, job_status) -> None:
    from airflow_provider_rayorch.sensors.rayorch import RayOrchRunSensor

    write_finished_run(tmp_path, job_status)
    op = _operator(tmp_path)
    ti = mock.MagicMock(dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    with mock.patch.object(type(op), "_run_id", return_value="run"):
        from_operator = op.get_job_result("j", {"ti": ti, "outlet_events": mock.MagicMock()})
    sensor = RayOrchRunSensor(task_id="run", run_id="run", run_store=str(tmp_path))
    from_sensor = sensor._result()
    assert from_operator["job_status"] == from_sensor["job_status"] == job_status


@pytest.mark.parametrize(
    ("job_status", "done"),
    [
        pytest.param("SUCCEEDED", True, id="succeeded"),
        pytest.param("MISSING", True, id="head-gone-manifest-is-the-witness"),
        pytest.param("FAILED", False, id="failed-after-the-manifest"),
        pytest.param("STOPPED", False, id="stopped-after-the-manifest"),
    ],
)
def test_the_run_sensor_judges_a_manifest_by_the_one_rule(
    tmp_path, fake_engine, job_status, done
) -> None:
    from airflow_provider_rayorch.exceptions import RayOrchJobFailed
    from airflow_provider_rayorch.sensors.rayorch import RayOrchRunSensor

    write_finished_run(tmp_path, "SUCCEEDED")
    sensor = RayOrchRunSensor(task_id="run", run_id="run", run_store=str(tmp_path), job_id="j")
    sensor.__dict__["hook"] = mock.MagicMock(**{"get_job_status.return_value": job_status})
    ti = mock.MagicMock(dag_id="d", run_id="r", task_id="run", map_index=-1, try_number=1)
    if done:
        assert sensor.poke({"ti": ti}).is_done
        return
    with pytest.raises(RayOrchJobFailed, match=f"ended {job_status} after writing the run"):
        sensor.poke({"ti": ti})


def test_the_operator_never_takes_a_manifest_for_a_job_ray_lost(tmp_path, fake_engine) -> None:
    """A repair's run manifest predates its job: a job Ray no longer knows is an error
    for the operator, not the old manifest's success."""
    from airflow_provider_rayorch.exceptions import RayOrchJobFailed

    write_finished_run(tmp_path, "SUCCEEDED")
    op = _operator(tmp_path)
    op.hook.get_job_info.return_value = None
    op.hook.get_job_logs.return_value = ""
    ti = mock.MagicMock(dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    with (
        mock.patch.object(type(op), "_run_id", return_value="run"),
        pytest.raises(RayOrchJobFailed, match="does not know job j"),
    ):
        op._poll("j", {"ti": ti})
