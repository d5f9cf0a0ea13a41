"""A served report lists a bounded sample of source rows (the manifests' samples, and
every row of the microbatch it opens on); every source is listed page by page, each
page reading the microbatches that hold its sources only."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_rayorch.reports import SourceForm, render_run_report

from .test_live_report import _run
from .test_report import parse

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def measured(fake_engine: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    for name in ("call_metrics", "timeline"):  # the fake engine measures nothing
        monkeypatch.setattr(fake_engine.FakeExecutor, name, lambda self: [], raising=False)
    return fake_engine


def _parquet(paths: list[str]) -> list[str]:
    """The microbatches whose output files were read (once each)."""
    return sorted({p.rsplit("/", 2)[-2] for p in paths if "/outputs/" in p and ".parquet" in p})


def test_a_served_report_reads_the_output_files_of_its_microbatch_only(
    tmp_path: Any, measured: Any
) -> None:
    opened = {}
    for n in (10, 100):
        store, _, _ = _run(tmp_path / str(n), measured, n)
        handler = store.fs.handler
        handler.paths.clear()
        form = SourceForm(fields=(("dag_id", "d"), ("run_id", "r")))
        html = render_run_report(store, "run", focus=3, form=form)
        opened[n] = _parquet(handler.paths)
        rows = parse(html).rows["sources-table"][1:]
        assert {"6", "7"} <= {r[0] for r in rows}  # every row of the microbatch it opens on
        assert any(r[0] == "1" and "failed" in r for r in rows)  # failures of the others
    assert opened[10] == opened[100] == ["mb-00003"], opened
    assert 'href="sources?dag_id=d&amp;run_id=r&amp;page=0"' in html


def test_every_source_is_listed_page_by_page(tmp_path: Any, measured: Any) -> None:
    from airflow_provider_rayorch.reports.sources_page import read_source_page

    store, _, _ = _run(tmp_path, measured, 100)  # 200 sources in microbatches of 2
    handler = store.fs.handler
    handler.paths.clear()
    page = read_source_page(store, "run", 1, size=50)
    assert [r["source"] for r in page.rows] == list(range(50, 100))
    assert _parquet(handler.paths) == [f"mb-{i:05d}" for i in range(25, 50)]
    every = [read_source_page(store, "run", p, size=50) for p in range(page.pages)]
    assert page.pages == 4
    rows = [r for p in every for r in p.rows]
    assert [r["source"] for r in rows] == list(range(200))
    assert [r["source"] for r in rows if r["outcome"] == "failed"] == [1]
    assert rows[7]["label"] == "7"


def test_the_plugin_serves_every_source_page_by_page(
    tmp_path: Any, measured: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextlib import nullcontext

    from fastapi.testclient import TestClient

    from airflow_provider_rayorch.plugins import app as plugin_app
    from airflow_provider_rayorch.plugins.resolve import RunRef

    store, _, _ = _run(tmp_path, measured, 300)  # 600 sources: two pages of 500
    monkeypatch.setattr(plugin_app, "create_session", nullcontext)
    monkeypatch.setattr(plugin_app.resolve, "find_for_ti", lambda *a: RunRef(store.uri, "run"))
    plugin_app.app.dependency_overrides[plugin_app._READ_TI.dependency] = lambda: None
    try:
        http = TestClient(plugin_app.app)
        params = {"dag_id": "d", "run_id": "r", "task_id": "t", "map_index": "-1"}
        first = http.get("/sources", params={**params, "page": "0"}).text
        second = http.get("/sources", params={**params, "page": "1"}).text
    finally:
        plugin_app.app.dependency_overrides.clear()
    rows = [r[0] for html in (first, second) for r in parse(html).rows["sources-table"][1:]]
    assert rows == [str(s) for s in range(600)]
    assert 'href="sources?dag_id=d&amp;run_id=r&amp;task_id=t&amp;map_index=-1&amp;page=1"' in first
    assert "page=0" in second


def test_a_report_lists_a_bounded_number_of_microbatches(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the cap: the one the page opens on, failed ones, then the newest committed."""
    from airflow_provider_rayorch.reports import page as pages

    from .conftest import RUN, make_run

    store = make_run(tmp_path, committed=(0, 1, 2))
    monkeypatch.setattr(pages, "MAX_MICROBATCH_ROWS", 2)
    html = render_run_report(store, RUN)  # mb 0 and mb 1 failed, mb 2 succeeded
    assert [r[0] for r in parse(html).rows["microbatch-table"][1:]] == ["mb 0", "mb 1"]
    assert "listing 2 of 3 microbatches" in html
    focused = render_run_report(store, RUN, focus=2)
    assert [r[0] for r in parse(focused).rows["microbatch-table"][1:]] == ["mb 0", "mb 2"]
    monkeypatch.setattr(pages, "MAX_MICROBATCH_ROWS", 1)
    newest = render_run_report(store, RUN, focus=None)
    assert [r[0] for r in parse(newest).rows["microbatch-table"][1:]] == ["mb 0"]
    assert 'data-state="success"' in html
    monkeypatch.setattr(pages, "MAX_MICROBATCH_ROWS", 3)
    assert "microbatches-note" not in render_run_report(store, RUN)
