"""The Airflow plugin: registration, views, links, run resolution."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_rayorch.plugins.resolve import RunRef, ref_from_values

from .plugin_env import plugins_folder

pytestmark = pytest.mark.timeout(120)

SUMMARY = {
    "run_id": "d.t.abc",
    "microbatch": {"index": 2, "first_source": 8, "count": 4},
    "outputs": {"uri": "s3://bucket/runs/d.t.abc/outputs/mb-00002", "rows": 4},
}


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param(
            {"rayorch_run_id": "r1", "rayorch_run_store": "/data/runs"},
            RunRef("/data/runs", "r1"),
            id="operator-xcoms",
        ),
        pytest.param(
            {"return_value": SUMMARY}, RunRef("s3://bucket/runs", "d.t.abc", 2), id="summary"
        ),
        pytest.param(
            {
                "rayorch_summary": {
                    **SUMMARY,
                    "microbatch": None,
                    "outputs": {"uri": "/r/d.t.abc/outputs"},
                }
            },
            RunRef("/r", "d.t.abc"),
            id="failed-run-summary",
        ),
        pytest.param(
            {"run_id": "r2", "run_store": "/s", "microbatch": "{'index': 1, 'count': 4}"},
            RunRef("/s", "r2", 1),
            id="rendered-sensor-fields",
        ),
        pytest.param({"run_id": "{{ ti.xcom_pull() }}", "run_store": "/s"}, None, id="unrendered"),
        pytest.param({"return_value": [{"index": 0}]}, None, id="submit-descriptors-only"),
        pytest.param({}, None, id="nothing"),
    ],
)
def test_run_reference_from_task_values(values, expected) -> None:
    assert ref_from_values(values) == expected


def test_report_link_points_at_the_plugin(monkeypatch) -> None:
    from airflow.sdk.types import TaskInstanceKey  # noqa: F401 - the key type exists

    from airflow_provider_rayorch.links.report import RayOrchReportLink

    class Key:
        dag_id, run_id, task_id, map_index = "d", "manual__2026-01-01T00:00:00+00:00", "g.mb", 3

    link = RayOrchReportLink().get_link(None, ti_key=Key())  # type: ignore[arg-type]
    assert link == (
        "/rayorch/ti?dag_id=d&run_id=manual__2026-01-01T00%3A00%3A00%2B00%3A00"
        "&task_id=g.mb&map_index=3"
    )
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://airflow.example.com/team-a/")
    assert RayOrchReportLink().get_link(None, ti_key=Key()).startswith("/team-a/rayorch/ti?")  # type: ignore[arg-type]


def test_plugin_declares_valid_views_app_and_links() -> None:
    from airflow.api_fastapi.core_api.datamodels.plugins import ExternalViewResponse

    from airflow_provider_rayorch.plugins.plugin import RayOrchPlugin
    from airflow_provider_rayorch.sensors.rayorch import RayOrchMicrobatchSensor

    [app] = RayOrchPlugin.fastapi_apps
    assert app["url_prefix"] == "/rayorch"
    routes = {getattr(r, "path", "") for r in app["app"].routes}
    assert {"/", "/ti", "/dagrun"} <= routes
    views = [ExternalViewResponse(**v) for v in RayOrchPlugin.external_views]
    assert {v.destination for v in views} == {"nav", "dag_run", "task_instance"}
    assert all(not v.href.startswith("/") for v in views)  # relative: works under a base path
    [link] = RayOrchPlugin.operator_extra_links
    assert RayOrchMicrobatchSensor in link.operators
    assert link.name == "RayOrch report"


def test_a_microbatch_report_opens_on_its_microbatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A microbatch task's report marks its row and lists its sources, until the
    filter (a plain GET form: the pages run no script) asks for something else."""
    from contextlib import nullcontext

    from fastapi.testclient import TestClient

    from airflow_provider_rayorch.plugins import app as plugin_app

    from .conftest import RUN, make_run
    from .test_report import parse

    store = make_run(tmp_path / "runs")
    monkeypatch.setattr(plugin_app, "create_session", nullcontext)
    monkeypatch.setattr(plugin_app.resolve, "find_for_ti", lambda *a: RunRef(store.uri, RUN, 1))
    plugin_app.app.dependency_overrides[plugin_app._READ_TI.dependency] = lambda: None
    try:
        http = TestClient(plugin_app.app)
        params = {"dag_id": "d", "run_id": "r", "task_id": "t", "map_index": "1"}
        html = http.get("/ti", params=params).text
        page = parse(html)
        assert 'data-focus="mb-1"' in html
        assert '<tr id="mb-1" class="focus">' in html
        assert [r[0] for r in page.rows["sources-table"][1:]] == ["4", "5", "6", "7"]
        failed = parse(http.get("/ti", params={**params, "q": "", "outcome": "failed"}).text)
        assert [r[0] for r in failed.rows["sources-table"][1:]] == ["3"]
        cause = parse(http.get("/ti", params={**params, "q": "BLANK"}).text)
        assert [r[0] for r in cause.rows["sources-table"][1:]] == ["5"]
        assert 'id="source-shown">1<' in http.get("/ti", params={**params, "q": "blank"}).text
    finally:
        plugin_app.app.dependency_overrides.clear()


def test_airflow_plugins_lists_the_plugin(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        AIRFLOW_HOME=str(tmp_path),
        AIRFLOW__CORE__PLUGINS_FOLDER=str(plugins_folder(tmp_path)),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
    )
    airflow = str(Path(sys.executable).with_name("airflow"))
    out = subprocess.run(
        [airflow, "plugins", "--output", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
        check=True,
    ).stdout
    assert '"name": "rayorch"' in out, out
    assert "RayOrch run reports" in out
    assert "rayorch-task-instance" in out


@pytest.mark.parametrize(
    "path", ["/", "/ti?dag_id=d&run_id=r&task_id=t", "/dagrun?dag_id=d&run_id=r"]
)
def test_pages_require_a_logged_in_user(path: str) -> None:
    from fastapi.testclient import TestClient

    from airflow_provider_rayorch.plugins.app import app

    response = TestClient(app).get(path)
    assert response.status_code == 401
