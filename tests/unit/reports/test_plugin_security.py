"""Nothing a store writer controls runs as script in Airflow's
origin. Every field a user or a pipeline controls carries markup and script; the
plugin's pages show it as text, and every response forbids inline script."""

from __future__ import annotations

from contextlib import nullcontext
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any

import pytest

from .payloads import PAYLOAD, RUN_PAYLOAD, plant, plant_states

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)


class _Page(HTMLParser):
    """Start tags with their attributes, and the page's text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def assert_inert(html: str) -> str:
    """No script, no event handler, no image from the payload; returns the page text."""
    page = _Page()
    page.feed(html)
    assert [t for t, _ in page.tags if t in ("script", "img", "iframe", "object")] == []
    for tag, attrs in page.tags:
        handlers = [a for a in attrs if a.lower().startswith("on")]
        assert not handlers, (tag, attrs)
        assert "style" not in attrs, (tag, attrs)  # the CSP allows no inline style attribute
    return "".join(page.text)


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The plugin app over a planted run store: access checks passed, the metadata DB
    replaced by the run it resolves to."""
    import airflow.api_fastapi.app as airflow_app
    from airflow.api_fastapi.core_api.security import get_user
    from fastapi.testclient import TestClient

    from airflow_provider_rayorch.plugins import app as plugin_app
    from airflow_provider_rayorch.plugins.resolve import RunRef, TaskRun

    store = plant(tmp_path / "runs")
    run = TaskRun(PAYLOAD, PAYLOAD, PAYLOAD, -1, RUN_PAYLOAD, store.uri)
    monkeypatch.setattr(plugin_app, "create_session", nullcontext)
    monkeypatch.setattr(
        plugin_app.resolve, "find_for_ti", lambda *a: RunRef(store.uri, RUN_PAYLOAD, 1)
    )
    monkeypatch.setattr(plugin_app.resolve, "find_for_dag_run", lambda *a: [run, run])
    monkeypatch.setattr(plugin_app.resolve, "recent_runs", lambda *a: [run])

    class _Auth:
        def get_authorized_dag_ids(self, user: Any) -> None:
            return None

    monkeypatch.setattr(airflow_app, "get_auth_manager", _Auth)
    plugin_app.app.dependency_overrides[plugin_app._READ_TI.dependency] = lambda: None
    plugin_app.app.dependency_overrides[get_user] = lambda: None
    http = TestClient(plugin_app.app)
    http.store_uri = store.uri  # type: ignore[attr-defined]
    yield http
    plugin_app.app.dependency_overrides.clear()


ROUTES = [
    pytest.param("/ti", {"dag_id": "d", "run_id": "r", "task_id": "t"}, id="report-tab"),
    pytest.param("/dagrun", {"dag_id": "d", "run_id": "r"}, id="dag-run-list"),
    pytest.param("/", {}, id="runs-page"),
]


@pytest.mark.parametrize(("path", "params"), ROUTES)
def test_planted_markup_is_shown_as_text_never_run(client: Any, path: str, params: dict) -> None:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    text = assert_inert(response.text)
    assert PAYLOAD in text or RUN_PAYLOAD in text


def test_every_field_of_the_report_is_escaped(client: Any) -> None:
    params = {"dag_id": "d", "run_id": "r", "task_id": "t", "q": ""}  # every source
    response = client.get("/ti", params=params)
    text = assert_inert(response.text)
    # source names, causes, pipeline, state, job message, repair message, run id
    assert f"{PAYLOAD}-9.pdf"[:60] in text
    assert f"cause {PAYLOAD}" in text
    assert f"pkg.mod:{PAYLOAD}" in text
    assert RUN_PAYLOAD in text
    assert text.count(PAYLOAD) >= 4


@pytest.mark.parametrize(("path", "params"), ROUTES)
def test_a_planted_state_is_inert(client: Any, path: str, params: dict) -> None:
    """The run manifest's state and the job's status as raw bytes in the store: the
    page names the damaged record (or shows the state) as text."""
    from airflow_provider_rayorch.runs.store import RunStore

    store = RunStore(client.store_uri)
    plant_states(store)
    response = client.get(path, params=params)
    assert response.status_code in (200, 500), response.text
    text = assert_inert(response.text)
    assert PAYLOAD in text or RUN_PAYLOAD in text
    _headers_ok(response)


def _headers_ok(response: Any) -> None:
    from airflow_provider_rayorch.plugins.app import CONTENT_SECURITY_POLICY

    csp = response.headers.get("content-security-policy")
    assert csp == CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in csp
    assert "script-src" not in csp  # default-src 'none': no script at all
    assert "'unsafe-inline'" not in csp
    assert response.headers.get("x-content-type-options") == "nosniff"


@pytest.mark.parametrize(
    ("path", "params", "status"),
    [
        *[pytest.param(*p.values, 200, id=p.id) for p in ROUTES],
        pytest.param("/static/report.css", {}, 200, id="stylesheet"),
        pytest.param("/no-such-page", {}, 404, id="not-found"),
    ],
)
def test_every_response_forbids_inline_script(
    client: Any, path: str, params: dict, status: int
) -> None:
    response = client.get(path, params=params)
    assert response.status_code == status
    _headers_ok(response)


@pytest.mark.parametrize(
    "path", ["/", "/ti?dag_id=d&run_id=r&task_id=t", "/dagrun?dag_id=d&run_id=r"]
)
def test_refusals_carry_the_headers_too(path: str) -> None:
    from fastapi.testclient import TestClient

    from airflow_provider_rayorch.plugins.app import app

    response = TestClient(app).get(path)
    assert response.status_code == 401
    _headers_ok(response)


def test_a_crash_answers_500_with_the_headers(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_rayorch.plugins import app as plugin_app

    def boom(*args: Any) -> None:
        raise RuntimeError("store unreachable")

    monkeypatch.setattr(plugin_app.resolve, "find_for_ti", boom)
    response = client.get("/ti", params={"dag_id": "d", "run_id": "r", "task_id": "t"})
    assert response.status_code == 500
    _headers_ok(response)
