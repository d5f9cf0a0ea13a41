"""Transient Jobs-API errors are retried by the operator, both sensors and the triggers,
up to one budget; then a clear error (issue 12, finding 11)."""

from __future__ import annotations

from unittest import mock

import pytest

from airflow_provider_rayorch.exceptions import RayOrchClusterError
from airflow_provider_rayorch.rayorch.store import RunStore
from airflow_provider_rayorch.sensors.rayorch import RayOrchRunSensor

pytestmark = pytest.mark.timeout(60)


def _summary() -> dict:
    return {
        "run_id": "r",
        "state": "success",
        "sources": {"total": 2, "present": 2, "dropped": 0, "failed": 0, "suppressed": 0},
        "failures": [],
    }


def _ctx():
    ti = mock.MagicMock()
    ti.xcom_push.side_effect = lambda key, value: None
    return {"ti": ti}


def test_run_sensor_tolerates_one_transient_status_error(tmp_path) -> None:
    RunStore(str(tmp_path)).write_run_manifest("r", _summary())
    sensor = RayOrchRunSensor(
        task_id="run",
        run_id="r",
        run_store=str(tmp_path),
        job_id="j",
        deferrable=False,
        poke_interval=0.01,
    )
    answers = iter([RayOrchClusterError("HTTP 503: dashboard restarting"), "SUCCEEDED"])

    def status(job_id):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    sensor.__dict__["hook"] = mock.MagicMock(**{"get_job_status.side_effect": status})
    result = sensor.poke(_ctx())
    assert result.is_done
    assert result.xcom_value["sources"]["present"] == 2
