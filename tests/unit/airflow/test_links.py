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


def test_plugin_links_module_re_exports_the_report_link() -> None:
    from airflow_provider_rayorch.plugins import links

    assert links.RayOrchReportLink is RayOrchReportLink


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
