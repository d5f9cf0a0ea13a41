"""The extra links: "Ray job" while its dashboard exists, the stored report once a
loopback head is gone; "RayOrch report" from the task instance key alone."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from airflow_provider_rayorch.common.states import JOB_URL_KEY, LOCAL_HEAD_KEY
from airflow_provider_rayorch.links.rayorch import RayJobLink
from airflow_provider_rayorch.links.report import RayOrchReportLink

pytestmark = pytest.mark.timeout(30)

KEY = SimpleNamespace(dag_id="d", run_id="r1", task_id="t", map_index=2, try_number=1)


@pytest.fixture
def xcoms(monkeypatch):
    values: dict[str, object] = {}
    from airflow.sdk.execution_time import xcom

    monkeypatch.setattr(
        xcom.XCom, "get_value", classmethod(lambda cls, *, ti_key, key: values.get(key))
    )
    return values


def test_report_link_is_the_plugin_page_of_the_task_instance() -> None:
    link = RayOrchReportLink().get_link(None, ti_key=KEY)
    assert link == "/rayorch/ti?dag_id=d&run_id=r1&task_id=t&map_index=2"


def test_cluster_job_link_is_the_dashboard(xcoms) -> None:
    xcoms[JOB_URL_KEY] = "http://head:8265/#/jobs/j1"
    assert RayJobLink().get_link(SimpleNamespace(), ti_key=KEY) == "http://head:8265/#/jobs/j1"


def test_local_head_job_link_opens_the_stored_report(xcoms) -> None:
    """Airflow 3 fixes the link when the task ends; the head's dashboard ends with its
    teardown, so the link opens what outlives it."""
    xcoms.update({JOB_URL_KEY: "http://127.0.0.1:8997/#/jobs/j1", LOCAL_HEAD_KEY: True})
    link = RayJobLink().get_link(SimpleNamespace(), ti_key=KEY)
    assert link == RayOrchReportLink().get_link(None, ti_key=KEY)


def test_no_job_no_link(xcoms) -> None:
    assert RayJobLink().get_link(SimpleNamespace(_job_id=None), ti_key=KEY) == ""
    assert RayJobLink().get_link(SimpleNamespace(), ti_key=KEY) == ""


def _ui_src(href: str, dag_id: str, run_id: str, task_id: str, map_index: int | None) -> str:
    """The iframe address Airflow 3.3's UI builds from a task_instance external view:
    it fills ``{MAP_INDEX}`` only on a mapped task instance's page."""
    from urllib.parse import quote

    src = href.replace("{DAG_ID}", quote(dag_id, safe=""))
    src = src.replace("{RUN_ID}", quote(run_id, safe="")).replace("{TASK_ID}", quote(task_id))
    return src if map_index is None else src.replace("{MAP_INDEX}", str(map_index))


@pytest.mark.parametrize(("map_index", "expected"), [(None, "-1"), (3, "3")])
def test_task_instance_tab_opens_the_report_without_a_placeholder(
    monkeypatch, map_index, expected
) -> None:
    """A non-mapped task's "RayOrch report" tab asked for ``map_index={MAP_INDEX}``
    (the UI leaves the placeholder as is): it is sent on to the task's own address."""
    from contextlib import nullcontext
    from urllib.parse import parse_qs, urlsplit

    from fastapi.testclient import TestClient

    from airflow_provider_rayorch.plugins import app as plugin_app
    from airflow_provider_rayorch.plugins.plugin import RayOrchPlugin

    (view,) = [v for v in RayOrchPlugin.external_views if v["destination"] == "task_instance"]
    src = _ui_src(view["href"], "d", "manual__2026-12-01T12:00:00+00:00", "t", map_index)
    asked: list[int] = []
    monkeypatch.setattr(plugin_app, "create_session", nullcontext)
    monkeypatch.setattr(
        plugin_app.resolve, "find_for_ti", lambda _s, _d, _r, _t, index: asked.append(index)
    )
    plugin_app.app.dependency_overrides[plugin_app._READ_TI.dependency] = lambda: None
    try:
        response = TestClient(plugin_app.app).get("/" + src.partition("/")[2] + "&q=x")
    finally:
        plugin_app.app.dependency_overrides.clear()
    assert response.status_code == 404  # no run behind it: the page says so
    assert "{MAP_INDEX}" not in str(response.url)
    query = parse_qs(urlsplit(str(response.url)).query)
    assert query["map_index"] == [expected]
    assert query["run_id"] == ["manual__2026-12-01T12:00:00+00:00"]
    assert query["q"] == ["x"]
    assert asked == [int(expected)]
