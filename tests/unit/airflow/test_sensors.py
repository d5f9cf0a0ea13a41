from __future__ import annotations

from unittest import mock

import jinja2
import pytest
from airflow.sdk.exceptions import TaskDeferred

from airflow_provider_rayorch.exceptions import RayOrchFailedRatioExceeded, RayOrchJobFailed
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.sensors import _wait_mode
from airflow_provider_rayorch.sensors.rayorch import (
    MICROBATCH_MAP_INDEX_TEMPLATE,
    RayOrchMicrobatchSensor,
    RayOrchRunSensor,
)
from airflow_provider_rayorch.triggers.rayorch import RayOrchMicrobatchTrigger

pytestmark = pytest.mark.timeout(30)

MB = {"index": 1, "first_source": 4, "count": 4}


def _summary(failed: int = 0) -> dict:
    return {
        "run_id": "r",
        "state": "success",
        "microbatch": dict(MB),
        "sources": {
            "total": 4,
            "present": 4 - failed,
            "dropped": 0,
            "failed": failed,
            "suppressed": 0,
        },
        "failures": [{"source": 5, "outcome": "failed", "cause": "doc[5]: bad"}] * failed,
    }


def _ctx():
    ti = mock.MagicMock()
    pushed: dict = {}
    ti.xcom_push.side_effect = lambda key, value: pushed.__setitem__(key, value)
    return {"ti": ti}, pushed


def _sensor(tmp_path, **kw):
    kw.setdefault("deferrable", False)
    return RayOrchMicrobatchSensor(
        task_id="mb", microbatch=MB, run_id="r", run_store=str(tmp_path), **kw
    )


def test_poke_waits_then_returns_summary(tmp_path) -> None:
    sensor = _sensor(tmp_path)
    ctx, _ = _ctx()
    assert sensor.poke(ctx).is_done is False
    RunStore(str(tmp_path)).commit_microbatch("r", 1, _summary())
    result = sensor.poke(ctx)
    assert result.is_done
    assert result.xcom_value["sources"]["present"] == 4


def test_own_failed_ratio_fails_with_summary_pushed(tmp_path) -> None:
    RunStore(str(tmp_path)).commit_microbatch("r", 1, _summary(failed=1))
    ctx, pushed = _ctx()
    with pytest.raises(RayOrchFailedRatioExceeded, match="doc\\[5\\]: bad"):
        _sensor(tmp_path, max_failed_ratio=0.2).poke(ctx)
    assert pushed["return_value"]["state"] == "failed"
    assert _sensor(tmp_path, max_failed_ratio=0.25).poke(ctx).xcom_value["state"] == "success"


def test_job_ending_without_the_manifest_fails(tmp_path) -> None:
    sensor = _sensor(tmp_path, job_id="j")
    sensor.__dict__["hook"] = mock.MagicMock(**{"get_job_status.return_value": "FAILED"})
    with pytest.raises(RayOrchJobFailed, match="before microbatch 1"):
        sensor.poke(_ctx()[0])


def test_deferrable_defers_until_commit_then_completes(tmp_path) -> None:
    sensor = _sensor(tmp_path, deferrable=True, job_id="j", end_from_trigger=True)
    ctx, _ = _ctx()
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(ctx)
    trigger = deferred.value.trigger
    assert isinstance(trigger, RayOrchMicrobatchTrigger)
    assert (trigger.index, trigger.job_id) == (1, "j")
    # the trigger judges with the sensor's bar and ends the task itself
    assert (trigger.max_failed_ratio, trigger.end_from_trigger) == (sensor.max_failed_ratio, True)
    event = {"status": "committed", "index": 1, "summary": _summary()}
    assert sensor.execute_complete(ctx, event)["state"] == "success"
    with pytest.raises(RayOrchJobFailed, match="ended"):
        sensor.execute_complete(ctx, {"status": "error", "index": 1, "message": "job ended"})
    with pytest.raises(RayOrchJobFailed, match="not 1"):
        sensor.execute_complete(ctx, {**event, "index": 2})


def test_already_committed_does_not_defer(tmp_path) -> None:
    RunStore(str(tmp_path)).commit_microbatch("r", 1, _summary())
    assert _sensor(tmp_path, deferrable=True).execute(_ctx()[0])["state"] == "success"


def test_map_index_template_shows_source_range() -> None:
    task = mock.MagicMock(microbatch=MB)
    assert jinja2.Template(MICROBATCH_MAP_INDEX_TEMPLATE).render(task=task) == "mb 1: sources 4-7"


def test_run_sensor_judges_the_run(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    sensor = RayOrchRunSensor(
        task_id="run",
        run_id="r",
        run_store=str(tmp_path),
        job_id=None,
        deferrable=False,
        max_failed_ratio=0.0,
    )
    with pytest.raises(RayOrchJobFailed, match="without a run manifest"):
        sensor.poke(_ctx()[0])
    store.write_run_manifest("r", _summary(failed=1))
    ctx, pushed = _ctx()
    with pytest.raises(RayOrchFailedRatioExceeded):
        sensor.poke(ctx)
    assert pushed["return_value"]["sources"]["failed"] == 1


def test_deferred_run_sensor_hands_its_bar_to_the_trigger(tmp_path) -> None:
    """The run sensor's trigger ends the task itself, judged with the sensor's bar."""
    sensor = RayOrchRunSensor(
        task_id="run",
        run_id="r",
        run_store=str(tmp_path),
        job_id="j",
        max_failed_ratio=0.25,
        end_from_trigger=True,
    )
    sensor.__dict__["hook"] = mock.MagicMock(**{"get_job_status.return_value": "RUNNING"})
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(_ctx()[0])
    trigger = deferred.value.trigger
    assert (trigger.max_failed_ratio, trigger.end_from_trigger) == (0.25, True)


def test_sensors_can_resume_on_a_worker_instead(tmp_path) -> None:
    sensor = _sensor(tmp_path, deferrable=True, job_id="j", end_from_trigger=False)
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(_ctx()[0])
    assert deferred.value.trigger.end_from_trigger is False


def test_dag_test_resuming_an_ended_task_judges_the_store_again(tmp_path) -> None:
    """``dag.test()`` resumes a task its trigger ended, with the end state as the event
    (Airflow 3.3 applies no task-end event there): the sensors judge the store again."""
    sensor, ctx = _sensor(tmp_path, deferrable=True), _ctx()[0]
    with pytest.raises(RayOrchJobFailed, match="did not commit: its trigger ended the task failed"):
        sensor.execute_complete(ctx, "failed")
    RunStore(str(tmp_path)).commit_microbatch("r", 1, _summary())
    assert sensor.execute_complete(ctx, "success")["state"] == "success"
    run = RayOrchRunSensor(task_id="run", run_id="r", run_store=str(tmp_path), job_id="j")
    with pytest.raises(RayOrchJobFailed, match="no run manifest: its trigger ended the task"):
        run.execute_complete(ctx, "failed")
    RunStore(str(tmp_path)).write_run_manifest("r", _summary(failed=1))
    with pytest.raises(RayOrchFailedRatioExceeded):
        run.execute_complete(ctx, "failed")


@pytest.mark.parametrize(
    ("given", "listeners", "ends"),
    [
        pytest.param(None, False, True, id="default-no-listeners"),
        pytest.param(None, True, False, id="default-beside-listeners"),
        pytest.param(True, True, True, id="forced-on"),
        pytest.param(False, False, False, id="forced-off"),
    ],
)
def test_end_from_trigger_defaults_to_airflows_rule(
    monkeypatch, tmp_path, given, listeners: bool, ends: bool
) -> None:
    """By default the sensors end in the triggerer unless listener plugins are
    registered: Airflow refuses ``end_from_trigger=True`` beside listeners at DAG import
    (they would not see the task end)."""
    monkeypatch.setattr(_wait_mode, "listeners_registered", lambda: listeners)
    assert _sensor(tmp_path, end_from_trigger=given).end_from_trigger is ends
