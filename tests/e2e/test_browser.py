"""The UI in a real browser, against the e2e deployment (its
scheduler, triggerer and API server; simple auth manager, everyone admin). A
per-microbatch DAG runs through the scheduler against a loopback Ray head reached
through a ``rayorch_head`` connection (made through the REST API, token as its
password); headless chromium then checks the grid with the mapped microbatch task
instances, a microbatch's lineage summary (XCom), the RayOrch report views, the runs
page and the extra link. Screenshots are kept as artefacts
(``$RAYORCH_BROWSER_ARTIFACTS``, else a tmp dir; ``RAYORCH_DOC_IMAGES=1`` also
copies them to docs/images).

The planted-payload test serves a run store whose every field a
user or a pipeline controls carries markup and script through the plugin's app (uvicorn
on loopback, no deployment needed) and checks in the browser that nothing ran."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest
import requests
from browser import body_text, chromium, expand_grid, missing_browser, serve, wait_until
from e2e_helpers import EXAMPLES, ROOT
from e2e_runs import all_task_logs, assert_no_secret, run_to_the_end
from ui_shots import assert_surfaces_say

_missing = missing_browser()
if _missing:
    pytest.skip(_missing, allow_module_level=True)

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

DAG_ID = "rayorch_browser"
DOC_IMAGES = ROOT / "docs" / "images"
FAILED_SHOT = Path(os.environ.get("RAYORCH_BROWSER_ARTIFACTS") or "/tmp") / "failed-page.png"


@pytest.fixture(scope="module")
def artifacts(e2e_root) -> Path:
    where = Path(os.environ.get("RAYORCH_BROWSER_ARTIFACTS") or e2e_root / "browser-artifacts")
    where.mkdir(parents=True, exist_ok=True)
    return where


@pytest.fixture(scope="module")
def ui(airflow_deployment, airflow_rest, ray_head, ray_token, e2e_root, artifacts):
    """Run the DAG through the deployment's scheduler; yield (url, result, browser)."""
    airflow_rest.put_connection(
        {
            "connection_id": "rayorch_head",
            "conn_type": "rayorch",
            "host": ray_head["address"],
            "password": ray_token,
            "extra": json.dumps(
                {
                    "run_store": str(e2e_root / "browser-runs"),
                    "runtime_env": {"working_dir": str(EXAMPLES)},
                }
            ),
        },
    )
    run_id, tis = run_to_the_end(airflow_rest, DAG_ID)
    assert_no_secret(
        {"connection password": ray_token},
        task_logs=all_task_logs(airflow_rest, DAG_ID, run_id),
        xcom=repr(airflow_rest.xcoms(DAG_ID, run_id)),
    )
    result = {
        "run_id": run_id,
        "tasks": {f"{task}[{index}]": ti for (task, index), ti in tis.items()},
    }
    with chromium() as driver:
        yield airflow_deployment.url, result, driver


def _shot(driver, artifacts: Path, name: str) -> None:
    path = artifacts / f"{name}.png"
    driver.save_screenshot(str(path))
    if os.environ.get("RAYORCH_DOC_IMAGES") == "1":
        DOC_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, DOC_IMAGES / path.name)


def _open(driver, url: str, *texts: str, timeout: float = 60) -> str:
    """Load a UI page and wait until every text is visible in it."""
    driver.get(url)
    try:
        return wait_until(
            lambda: (lambda t: t if all(x in t for x in texts) else None)(body_text(driver)),
            timeout,
            f"{texts} on {url}",
        )
    except AssertionError:
        driver.save_screenshot(str(FAILED_SHOT))
        labels = [
            (b.get_attribute("aria-label"), b.get_attribute("title"), b.text)
            for b in driver.find_elements("css selector", "button, [role=button]")
        ]
        raise AssertionError(f"{texts} not on {url}; buttons {labels}") from None


def _in_frame(driver, css: str, timeout: float = 60) -> list:
    """Switch into the plugin's iframe and wait for visible elements matching ``css``."""
    from selenium.webdriver.common.by import By

    frame = wait_until(lambda: driver.find_element(By.TAG_NAME, "iframe"), timeout, "the iframe")
    driver.switch_to.frame(frame)
    return wait_until(
        lambda: [e for e in driver.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()],
        timeout,
        f"{css} in the plugin view",
    )


def _run_path(result) -> str:
    return f"/dags/{DAG_ID}/runs/{quote(result['run_id'], safe='')}"


def test_grid_shows_the_mapped_microbatch_task_instances(ui, artifacts) -> None:
    url, result, driver = ui
    assert {result["tasks"][f"docs.microbatch[{i}]"]["state"] for i in range(3)} == {"success"}
    _open(driver, f"{url}{_run_path(result)}", DAG_ID, "docs")
    expand_grid(driver, "submit", "microbatch", "run")
    _shot(driver, artifacts, "grid")
    text = _open(
        driver,
        f"{url}{_run_path(result)}/tasks/docs.microbatch/mapped",
        "mb 0: sources 0-3",
        "mb 1: sources 4-7",
        "mb 2: sources 8-11",
    )
    assert "success" in text.lower()
    _shot(driver, artifacts, "mapped-microbatches")


def test_every_surface_says_the_run_succeeded(ui, airflow_rest) -> None:
    """No surface says the finished run's job is RUNNING."""
    url, result, _ = ui
    summary = airflow_rest.xcom(DAG_ID, result["run_id"], "docs.run")
    assert_surfaces_say(url, DAG_ID, result["run_id"], summary, "success")


def test_microbatch_xcom_shows_its_lineage_summary(ui, artifacts) -> None:
    url, result, driver = ui
    _open(driver, f"{url}{_run_path(result)}/tasks/docs.microbatch/mapped/1/xcom", "return_value")
    driver.find_element("css selector", "button[aria-label='Expand all extra JSON']").click()
    try:
        wait_until(
            lambda: all(
                t in body_text(driver)
                for t in ("failures", "doc[5]/page[1]: unreadable page", "suppressed")
            ),
            30,
            "the expanded lineage summary",
        )
    finally:
        _shot(driver, artifacts, "microbatch-xcom")


def test_task_instance_tab_shows_the_report_focused_on_its_microbatch(ui, artifacts) -> None:
    from selenium.webdriver.common.by import By

    url, result, driver = ui
    driver.get(
        f"{url}{_run_path(result)}/tasks/docs.microbatch/mapped/1/plugin/rayorch-task-instance"
    )
    try:
        plots = _in_frame(driver, "svg.plot")
        kinds = {p.get_attribute("data-plot") for p in plots}
        assert {"microbatches", "completion"} <= kinds
        focused = driver.find_element(By.CSS_SELECTOR, "#microbatch-table tr.focus")
        assert focused.get_attribute("id") == "mb-1"
        rows = [
            r
            for r in driver.find_elements(By.CSS_SELECTOR, "#sources-table tbody tr")
            if r.is_displayed()
        ]
        assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == ["4", "5", "6", "7"]
        assert "doc[5]/page[1]: unreadable page" in rows[1].text
    finally:
        driver.switch_to.default_content()
    _shot(driver, artifacts, "report-task-instance")


def test_dag_run_tab_shows_the_report_plots(ui, artifacts) -> None:
    from selenium.webdriver.common.by import By

    url, result, driver = ui
    driver.get(f"{url}{_run_path(result)}/plugin/rayorch-dag-run")
    try:
        plots = _in_frame(driver, "svg.plot")
        kinds = [p.get_attribute("data-plot") for p in plots]
        header = driver.find_element(By.TAG_NAME, "h1").text
        stored = "No batch timeline was recorded" not in body_text(driver)
    finally:
        driver.switch_to.default_content()
    _shot(driver, artifacts, "report-dag-run")
    assert "RayOrch run report" in header
    assert {"microbatches", "completion"} <= set(kinds)
    assert stored, "the driver wrote no report.json: the report has no batch timeline"
    assert {"timeline", "queue", "batch-sizes"} <= set(kinds)


def test_report_page_filters_sources(ui, artifacts) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    url, result, driver = ui
    query = f"dag_id={DAG_ID}&run_id={quote(result['run_id'], safe='')}"
    driver.set_window_size(1280, 2800)
    try:
        driver.get(f"{url}/rayorch/dagrun?{query}")
        wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, "svg.plot"), 30, "the plots")
        assert driver.find_element(By.ID, "source-shown").text == "12"
        _shot(driver, artifacts, "report-full")
        # a GET form (the pages run no script): type, press Enter, the page comes back filtered
        driver.find_element(By.ID, "source-filter").send_keys("unreadable" + Keys.ENTER)
        wait_until(
            lambda: driver.find_element(By.ID, "source-shown").text == "1", 30, "one source left"
        )
        [row] = [
            r
            for r in driver.find_elements(By.CSS_SELECTOR, "#sources-table tbody tr")
            if r.is_displayed()
        ]
        assert row.text.startswith("5 mb 1 suppressed doc[5]/page[1]: unreadable page")
    finally:
        driver.set_window_size(1440, 1000)


def test_runs_page_and_extra_link(ui, artifacts) -> None:
    from selenium.webdriver.common.by import By

    url, result, driver = ui
    driver.get(f"{url}/plugin/rayorch-runs")
    try:
        links = _in_frame(driver, "#runs a.report-link")
        assert any(a.text.startswith(f"{DAG_ID}.docs.submit") for a in links)
        assert "success" in driver.find_element(By.ID, "runs").text
    finally:
        driver.switch_to.default_content()
    _shot(driver, artifacts, "runs")
    # the simple auth manager's all-admins mode authenticates every request
    got = requests.get(
        f"{url}/api/v2/dags/{DAG_ID}/dagRuns/{quote(result['run_id'], safe='')}"
        "/taskInstances/docs.microbatch/links",
        params={"map_index": 1},
        timeout=30,
    )
    assert got.ok, got.text
    link = got.json()["extra_links"]["RayOrch report"]
    assert link.startswith("/rayorch/ti?dag_id=rayorch_browser&")
    page = requests.get(f"{url}{link}", timeout=30)
    assert page.status_code == 200
    assert 'data-focus="mb-1"' in page.text
    missing = requests.get(
        f"{url}/rayorch/ti", params={"dag_id": DAG_ID, "run_id": "x", "task_id": "y"}
    )
    assert missing.status_code == 404
    assert "has no RayOrch run" in missing.text


# -- planted markup and script never run ---------------------------


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The plugin's app over a run store full of payloads, served on loopback: access
    checks passed, Airflow's metadata replaced by the planted run."""
    from contextlib import nullcontext

    import airflow.api_fastapi.app as airflow_app
    from airflow.api_fastapi.core_api.security import get_user

    from airflow_provider_rayorch.plugins import app as plugin_app
    from airflow_provider_rayorch.plugins.resolve import RunRef, TaskRun
    from tests.unit.reports.payloads import PAYLOAD, RUN_PAYLOAD, plant

    root = tmp_path_factory.mktemp("planted") / "runs"
    store = plant(root)
    run = TaskRun(PAYLOAD, PAYLOAD, PAYLOAD, -1, RUN_PAYLOAD, store.uri)

    class _Auth:
        def get_authorized_dag_ids(self, user: object) -> None:
            return None

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plugin_app, "create_session", nullcontext)
        mp.setattr(plugin_app.resolve, "find_for_ti", lambda *a: RunRef(store.uri, RUN_PAYLOAD, 1))
        mp.setattr(plugin_app.resolve, "find_for_dag_run", lambda *a: [run, run])
        mp.setattr(plugin_app.resolve, "recent_runs", lambda *a: [run])
        mp.setattr(airflow_app, "get_auth_manager", _Auth)
        plugin_app.app.dependency_overrides[plugin_app._READ_TI.dependency] = lambda: None
        plugin_app.app.dependency_overrides[get_user] = lambda: None
        try:
            with serve(plugin_app.app) as url, chromium() as driver:
                yield url, driver, store
        finally:
            plugin_app.app.dependency_overrides.clear()


def _nothing_ran(driver) -> str:
    """The page's text, after checking no payload ran (it would set ``window.__pwned``
    and the title) and no payload became an element."""
    from selenium.webdriver.common.by import By

    assert driver.execute_script("return window.__pwned === undefined") is True
    assert driver.title != "pwned"  # what the payload would set (the run id is in it as text)
    assert driver.find_elements(By.CSS_SELECTOR, "script, img, iframe, object") == []
    return body_text(driver)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("path", "ready"),
    [
        pytest.param("/ti?dag_id=d&run_id=r&task_id=t&map_index=1", "#sources-table", id="ti"),
        pytest.param("/ti?dag_id=d&run_id=r&task_id=t&q=&outcome=", "#attempts-table", id="all"),
        pytest.param("/dagrun?dag_id=d&run_id=r", "#runs", id="dag-run"),
        pytest.param("/", "#runs", id="runs-page"),
    ],
)
def test_planted_payloads_are_shown_as_text_and_never_run(planted, path: str, ready: str) -> None:
    from selenium.webdriver.common.by import By

    from tests.unit.reports.payloads import PAYLOAD, RUN_PAYLOAD

    url, driver, _ = planted
    driver.get(url + path)
    wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, ready), 30, ready)
    text = _nothing_ran(driver)
    assert RUN_PAYLOAD in text  # the run id, as text
    if path.startswith("/ti"):
        # source names, causes, pipeline, stage names, job message, repair job id/message
        assert text.count(PAYLOAD) >= 3, text
        assert f"pkg.mod:{PAYLOAD}" in text
    else:
        assert PAYLOAD in text  # DAG, DAG run and task names, the job message


@pytest.mark.timeout(120)
def test_planted_states_never_run(planted) -> None:
    """The run manifest's state and the job's status as raw bytes: still no script."""
    from tests.unit.reports.payloads import PAYLOAD, RUN_PAYLOAD, plant_states

    url, driver, store = planted
    plant_states(store)
    for path in ("/ti?dag_id=d&run_id=r&task_id=t", "/dagrun?dag_id=d&run_id=r", "/"):
        driver.get(url + path)
        wait_until(lambda: body_text(driver), 30, f"{path} to load")
        text = _nothing_ran(driver)
        # the state as text, or the damaged record named (by its path: the run id)
        assert PAYLOAD in text or RUN_PAYLOAD in text, (path, text)


@pytest.mark.timeout(120)
def test_the_kept_report_file_runs_no_payload(planted) -> None:
    """``report.html`` opened from disk has no CSP to help: escaping alone holds."""
    from pathlib import Path

    from tests.unit.reports.payloads import PAYLOAD, RUN_PAYLOAD

    _, driver, store = planted
    kept = Path(store.root) / RUN_PAYLOAD / "report.html"
    driver.get(kept.as_uri())
    wait_until(lambda: body_text(driver), 30, "the kept report")
    text = _nothing_ran(driver)
    assert f"cause {PAYLOAD}" in text
