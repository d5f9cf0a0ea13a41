"""The connection extra ``dashboard_url``: the "Ray job" link opens
``<dashboard_url>/#/jobs/<id>`` (one slash whatever the extra ends with, a path
prefix kept), the Jobs API address when the extra is unset or empty, and no job URL
for an embedded Ray (docs/airflow/connection.md, docs/airflow/operators.md)."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_rayorch.common.states import JOB_ID_KEY, JOB_URL_KEY
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.links.rayorch import RayJobLink
from airflow_provider_rayorch.operators._submit import JobSubmitting

pytestmark = pytest.mark.timeout(60)

CONN = "ro_dashboard"
HEAD = {"conn_type": "rayorch", "host": "http://ray-head.ray.svc", "port": 8265}


def _hook(monkeypatch: pytest.MonkeyPatch, conn: dict[str, Any]) -> RayOrchHook:
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN.upper()}", json.dumps(conn))
    return RayOrchHook(CONN)


@pytest.mark.parametrize(
    ("extra", "url"),
    [
        pytest.param(
            {"dashboard_url": "https://ray.example.com"},
            "https://ray.example.com/#/jobs/j1",
            id="dashboard-url",
        ),
        pytest.param(
            {"dashboard_url": "https://ray.example.com/"},
            "https://ray.example.com/#/jobs/j1",
            id="trailing-slash",
        ),
        pytest.param(
            {"dashboard_url": "https://gateway.example.com/clusters/ray-a/"},
            "https://gateway.example.com/clusters/ray-a/#/jobs/j1",
            id="path-prefix",
        ),
        pytest.param({}, "http://ray-head.ray.svc:8265/#/jobs/j1", id="unset-uses-the-address"),
        pytest.param(
            {"dashboard_url": ""}, "http://ray-head.ray.svc:8265/#/jobs/j1", id="empty-form-field"
        ),
    ],
)
def test_the_job_url_is_the_dashboard_url_or_the_address(
    monkeypatch: pytest.MonkeyPatch, extra: dict[str, str], url: str
) -> None:
    hook = _hook(monkeypatch, {**HEAD, "extra": extra})
    assert hook.dashboard_job_url("j1") == url


def test_an_embedded_ray_has_no_job_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """(An embedded run submits no Ray job, so nothing asks it for a link either.)"""
    hook = _hook(monkeypatch, {"conn_type": "rayorch", "extra": {"namespace": "ns"}})
    assert hook.embedded
    assert hook.dashboard_job_url("j1") is None


class _Submitting(JobSubmitting):
    def __init__(self, hook: RayOrchHook) -> None:
        self.hook = hook
        self.log = logging.getLogger("dashboard-url-test")


def test_the_ray_job_link_opens_the_dashboard_url_the_submit_pushed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hook = _hook(monkeypatch, {**HEAD, "extra": {"dashboard_url": "https://ray.example.com/"}})
    pushed: dict[str, Any] = {}
    ti = SimpleNamespace(xcom_push=lambda key, value: pushed.__setitem__(key, value))
    _Submitting(hook)._push_job({"ti": ti}, "rayorch-abc-try1")  # type: ignore[arg-type]
    assert pushed == {
        JOB_ID_KEY: "rayorch-abc-try1",
        JOB_URL_KEY: "https://ray.example.com/#/jobs/rayorch-abc-try1",
    }
    from airflow.sdk.execution_time import xcom

    monkeypatch.setattr(
        xcom.XCom, "get_value", classmethod(lambda cls, *, ti_key, key: pushed.get(key))
    )
    key = SimpleNamespace(dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    link = RayJobLink().get_link(SimpleNamespace(), ti_key=key)  # type: ignore[arg-type]
    assert link == "https://ray.example.com/#/jobs/rayorch-abc-try1"
