"""The report links the driver logs the run store keeps (``<run>/logs/driver-N.log``)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING
from urllib.parse import unquote

import pytest

from airflow_provider_rayorch import job
from airflow_provider_rayorch.reports import read_run_report, render_run_report, write_run_report
from airflow_provider_rayorch.runs.uris import DRIVER_LOGS, driver_log_parts

from .conftest import RUN, make_run
from .test_driver_report import EXAMPLES, _planned

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(120)


class _Links:
    """The ``href`` of every link in a page."""

    def __init__(self, html: str) -> None:
        from html.parser import HTMLParser

        self.hrefs: list[str] = []
        links = self.hrefs

        class _Parse(HTMLParser):
            def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
                if tag == "a":
                    links.extend(v or "" for k, v in attrs if k == "href")

        _Parse().feed(html)


def test_the_kept_report_links_each_driver_log_relative_to_itself(tmp_path: Path) -> None:
    store = make_run(tmp_path)
    for number in (1, 2):
        store.write_bytes(driver_log_parts(RUN, number), f"driver {number}\n".encode())
    write_run_report(store, RUN)
    html = read_run_report(store, RUN)
    assert html is not None
    hrefs = [h for h in _Links(html).hrefs if h.startswith(f"{DRIVER_LOGS}/")]
    assert hrefs == ["logs/driver-1.log", "logs/driver-2.log"]
    for href in hrefs:  # opened from the store, next to report.html, the link resolves
        assert (tmp_path / RUN / href).read_text().startswith("driver ")


def test_a_planted_log_name_is_escaped_in_text_and_link(tmp_path: Path) -> None:
    store = make_run(tmp_path)
    name = 'driver-"><img src=x onerror="window.__pwned=1">.log'  # no "/" in a file name
    store.write_bytes((RUN, DRIVER_LOGS, name), b"x")
    write_run_report(store, RUN)
    html = read_run_report(store, RUN)
    assert html is not None
    assert "<img" not in html
    assert "&lt;img src=x onerror=&#34;window.__pwned=1&#34;&gt;" in html  # shown as text
    (href,) = [h for h in _Links(html).hrefs if h.startswith(f"{DRIVER_LOGS}/")]
    assert '"' not in href
    assert "<" not in href
    assert unquote(href) == f"{DRIVER_LOGS}/{name}"


def test_the_served_report_names_the_log_where_it_is_kept(tmp_path: Path) -> None:
    """Served by the plugin, a relative link would point into Airflow: the page gives
    the log's URI in the run store instead."""
    store = make_run(tmp_path)
    store.write_bytes(driver_log_parts(RUN, 1), b"x")
    html = render_run_report(store, RUN, stylesheet="/rayorch/static/report.css")
    assert not [h for h in _Links(html).hrefs if DRIVER_LOGS in h]
    assert str(tmp_path / RUN / "logs" / "driver-1.log") in html


def test_a_run_without_a_driver_log_says_so(tmp_path: Path) -> None:
    store = make_run(tmp_path)
    write_run_report(store, RUN)
    html = read_run_report(store, RUN)
    assert html is not None
    assert 'id="driver-logs"' in html
    assert "no driver log" in html


def test_the_drivers_report_links_the_log_it_keeps(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "path", [str(EXAMPLES), *sys.path])
    store = _planned(tmp_path, ["a b", "c\fd", "e"])
    assert job.main(["--run-store", str(tmp_path), "--run-id", "run"]) == 0
    html = read_run_report(store, "run")
    assert html is not None
    assert "logs/driver-1.log" in _Links(html).hrefs
    assert "microbatch 2/2 committed" in (tmp_path / "run" / "logs" / "driver-1.log").read_text()
