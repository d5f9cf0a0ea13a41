"""Transient Jobs-API errors are retried by the hook's request path for the operator,
both sensors and the triggers, up to one budget; then a clear error. One try of a
request (``JobsApi.send``/``asend``) is replaced here."""

from __future__ import annotations

from unittest import mock

import httpx
import pytest

from airflow_provider_rayorch.common.polling import RetryPolicy
from airflow_provider_rayorch.exceptions import RayOrchClusterError, RayOrchClusterUnavailable
from airflow_provider_rayorch.hooks.jobs_api import JobsApi
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.runs.store import RunStore
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


def _job(status: str) -> httpx.Response:
    request = httpx.Request("GET", "http://h:8265/api/jobs/j")
    return httpx.Response(200, json={"status": status, "message": ""}, request=request)


def test_run_sensor_tolerates_one_transient_status_error(monkeypatch, tmp_path) -> None:
    RunStore(str(tmp_path)).write_run_manifest("r", _summary())
    sensor = RayOrchRunSensor(
        task_id="run",
        run_id="r",
        run_store=str(tmp_path),
        job_id="j",
        deferrable=False,
        poke_interval=0.01,
    )
    answers = iter([RayOrchClusterUnavailable("HTTP 503: dashboard restarting"), "SUCCEEDED"])

    def send(self, method, path, **kwargs):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return _job(answer)

    monkeypatch.setattr(JobsApi, "send", send)
    hook = RayOrchHook(address="http://h:8265", answered_before=True, retry=RetryPolicy(base_s=0))
    sensor.__dict__["hook"] = hook
    result = sensor.poke(_ctx())
    assert result.is_done
    assert result.xcom_value["sources"]["present"] == 2


def test_job_trigger_retries_a_transient_error_then_fires(monkeypatch, tmp_path) -> None:
    import asyncio

    from airflow_provider_rayorch.triggers import rayorch as triggers

    answers = [RayOrchClusterUnavailable("HTTP 502"), "SUCCEEDED"]

    async def asend(self, method, path, **kwargs):
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, Exception):
            raise answer
        return _job(answer)

    monkeypatch.setattr(JobsApi, "asend", asend)
    trigger = triggers.RayOrchJobTrigger(
        job_id="j",
        run_id="r",
        run_store=str(tmp_path),
        address="http://h:8265",
        poll_interval=0.01,
        tail_logs=False,
    )

    async def first():
        async for event in trigger.run():
            return event.payload
        return None

    assert asyncio.run(first())["status"] == "success"


def test_microbatch_trigger_fails_at_once_on_a_refused_token(monkeypatch, tmp_path) -> None:
    import asyncio

    from airflow_provider_rayorch.exceptions import RayOrchAuthError
    from airflow_provider_rayorch.triggers import rayorch as triggers

    calls = {"n": 0}

    async def status(self, job_id):
        calls["n"] += 1
        raise RayOrchAuthError("HTTP 401: the request carried no token")

    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_status", status)
    trigger = triggers.RayOrchMicrobatchTrigger(
        run_id="r", run_store=str(tmp_path), index=0, job_id="j", poll_interval=0.01
    )

    async def first():
        async for event in trigger.run():
            return event.payload
        return None

    event = asyncio.run(first())
    assert event["status"] == "error"
    assert "HTTP 401" in event["message"]
    assert calls["n"] == 1


def test_operator_poll_gives_up_after_the_budget(monkeypatch, tmp_path, fake_engine) -> None:
    from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

    sends: list[str] = []

    def send(self, method, path, **kwargs):
        sends.append(path)
        raise RayOrchClusterUnavailable("HTTP 504")

    monkeypatch.setattr(JobsApi, "send", send)
    hook = RayOrchHook(address="http://h:8265", retry=RetryPolicy(base_s=0.001))
    op = RayOrchOperator(
        task_id="t", pipeline="fake_pipelines:Square", sources=[1], run_store=str(tmp_path)
    )
    op.__dict__["hook"] = hook
    ti = mock.MagicMock(dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    with pytest.raises(RayOrchClusterError, match="gave up after 6 tries") as caught:
        op._poll("j", {"ti": ti})
    assert caught.value.transient is False
    assert sends.count("/api/jobs/j") == 6
