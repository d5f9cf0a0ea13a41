"""The HTML run report, on synthetic runs: sections, values, plots, storage."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest

from airflow_provider_rayorch.reports import (
    _data,
    read_run_report,
    render_run_report,
    report_uri,
    write_run_report,
)
from airflow_provider_rayorch.reports._svg import nice_ticks

from .conftest import RUN, make_run, make_timeline

pytestmark = pytest.mark.timeout(60)


class _Collect(HTMLParser):
    """Elements by id, SVG plots by data-plot, and the rows of every table by id."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.plots: list[str] = []
        self.rows: dict[str, list[list[str]]] = {}
        self.row_attrs: dict[str, list[dict[str, str]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._row: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "svg":
            self.plots.append(a.get("data-plot", ""))
        elif tag == "table":
            self._table = a.get("id", "")
            self.rows[self._table], self.row_attrs[self._table] = [], []
        elif tag == "tr" and self._table is not None:
            self._row = []
            self.row_attrs[self._table].append(a)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self.rows[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def parse(html: str) -> _Collect:
    p = _Collect()
    p.feed(html)
    return p


def test_full_report_has_every_section_plot_and_value(run_store) -> None:
    timeline, calls, timings = make_timeline()
    html = render_run_report(run_store, RUN, timeline, calls, microbatches=timings)
    page = parse(html)
    assert {"summary", "microbatches", "completion", "timeline", "queue", "batches", "sources"} <= (
        page.ids
    )
    assert page.plots == [
        "microbatches",
        "completion",
        "timeline",
        "queue",
        "batch-sizes",
        "batch-sizes",
    ]
    # header: run state from the run manifest, counts summed over microbatches
    assert 'data-state="success"' in html
    assert "pkg.mod:Docs" in html
    assert RUN in html
    # microbatch table: one row per microbatch with its range, state and counts
    mbs = page.rows["microbatch-table"][1:]
    assert [r[:3] for r in mbs] == [
        ["mb 0", "0-3", "failed"],
        ["mb 1", "4-7", "failed"],
        ["mb 2", "8-9", "success"],
    ]
    assert mbs[0][3:7] == ["3", "0", "1", "0"]  # present, dropped, failed, suppressed
    assert mbs[2][3:7] == ["1", "1", "0", "0"]
    # sources: one row per source with outcome and cause
    sources = page.rows["sources-table"][1:]
    assert [r[0] for r in sources] == [str(i) for i in range(10)]
    assert sources[3][2:4] == ["failed", "doc[3]: cannot open <pdf> & friends"]
    assert sources[5][2:4] == ["suppressed", "doc[5]/page[2]: blank"]
    assert sources[8][2:4] == ["dropped", ""]
    assert sources[9][4] == "doc-9.pdf"
    assert [a["data-outcome"] for a in page.row_attrs["sources-table"][1:]][3:6] == [
        "failed",
        "present",
        "suppressed",
    ]
    # causes are escaped, never markup
    assert "cannot open &lt;pdf&gt; &amp; friends" in html
    assert "<pdf>" not in html


def test_actor_lanes_show_busy_share_and_outcomes(run_store) -> None:
    timeline, calls, timings = make_timeline()
    html = render_run_report(run_store, RUN, timeline, calls, microbatches=timings)
    timeline_svg = re.search(r'<svg[^>]*data-plot="timeline".*?</svg>', html, re.S)
    assert timeline_svg is not None
    svg = timeline_svg.group(0)
    # run span is 4 s: w1 busy 2 s, w2 1 s, w3 0.5 s
    assert "ocr \u00b7 w1 (50%)" in svg
    assert "ocr \u00b7 w2 (25%)" in svg
    assert "asm \u00b7 w3 (12%)" in svg
    assert "ocr w2: raised" in svg  # the batch that raised is drawn in its own colour
    assert "asm w3: in flight" in svg  # dispatched at 2.5 s, busy only from 3.5 s
    # Calls table: utilization = busy_s / (replicas * span)
    rows = {r[0]: r for r in parse(html).rows["calls-table"][1:]}
    assert rows["ocr"][-1] == "38%"
    assert rows["asm"][-1] == "12%"


def test_queue_depth_and_batch_histograms(run_store) -> None:
    timeline, calls, timings = make_timeline()
    html = render_run_report(run_store, RUN, timeline, calls, microbatches=timings)
    assert "ocr: max 7 ready" in html
    assert "asm: max 0 ready" in html
    assert "ocr: 2 batches" in html
    assert "asm: 1 batches" in html
    assert "1 x 4" in html
    assert "1 x 2" in html


def test_batch_histogram_falls_back_to_dispatch_sizes(run_store) -> None:
    timeline, _, timings = make_timeline()
    html = render_run_report(run_store, RUN, timeline, [], microbatches=timings)
    assert "ocr: 2 batches" in html
    assert 'id="calls-table"' not in html


def test_completion_curve_steps_at_each_commit(run_store) -> None:
    timeline, calls, timings = make_timeline()
    html = render_run_report(run_store, RUN, timeline, calls, microbatches=timings)
    curve = re.search(r'<svg[^>]*data-plot="completion".*?</svg>', html, re.S)
    assert curve is not None
    assert "committed: 10" in curve.group(0)
    assert "present: 7" in curve.group(0)
    assert "10 sources" in curve.group(0)
    assert "mb 1 failed: 0.5-3 s" in html  # microbatch span from the driver's timings


def test_running_run_shows_pending_microbatches_and_store_times(tmp_path) -> None:
    store = make_run(tmp_path, committed=(0,), finished=False)
    html = render_run_report(store, RUN)
    page = parse(html)
    assert 'data-state="running"' in html
    assert [r[2] for r in page.rows["microbatch-table"][1:]] == ["failed", "pending", "pending"]
    assert len(page.rows["sources-table"]) == 1 + 4
    assert "1/3" in html  # microbatches committed
    # without a timeline: the sections stay, with a note instead of actor plots
    assert page.plots == ["microbatches", "completion"]
    assert "No batch timeline was recorded" in html
    assert "modification times" in html


@pytest.mark.parametrize(
    ("ratio", "state"),
    [pytest.param(0.5, "success", id="within-ratio"), pytest.param(0.0, "failed", id="over")],
)
def test_all_committed_before_the_run_manifest_has_its_final_state(
    tmp_path, ratio: float, state: str
) -> None:
    store = make_run(tmp_path, finished=False, max_failed_ratio=ratio)
    assert f'data-state="{state}"' in render_run_report(store, RUN)


def test_source_rows_are_capped_failures_first(run_store, monkeypatch) -> None:
    monkeypatch.setattr(_data, "MAX_SOURCE_ROWS", 4)
    page = parse(render_run_report(run_store, RUN))
    listed = [r[0] for r in page.rows["sources-table"][1:]]
    assert listed == ["0", "3", "5", "8"]  # the 3 non-present rows, then present ones
    assert "listing 4 of 10 rows" in render_run_report(run_store, RUN)


def test_write_then_read_is_atomic_and_returns_the_uri(run_store, tmp_path) -> None:
    timeline, calls, timings = make_timeline()
    uri = write_run_report(run_store, RUN, timeline, calls, microbatches=timings)
    assert uri == report_uri(run_store, RUN) == str(tmp_path / "runs" / RUN / "report.html")
    stored = read_run_report(run_store, RUN)
    assert stored is not None
    assert 'data-plot="timeline"' in stored
    # the driver's data and the kept page, no temporary file left
    assert sorted(p.name for p in (tmp_path / "runs" / RUN).iterdir() if "report" in p.name) == [
        "report.html",
        "report.json",
    ]
    assert read_run_report(run_store, "no-such-run") is None


def test_dense_timelines_are_merged_at_pixel_resolution(run_store) -> None:
    timeline = []
    for i in range(20_000):  # 10k back-to-back batches on one actor over 100 s
        t = i * 0.01
        timeline.append(
            {
                "event": "dispatch",
                "t": t,
                "call": "c",
                "worker": "w",
                "batch": i,
                "size": 1,
                "queued": i % 50,
            }
        )
        timeline.append(
            {
                "event": "report",
                "t": t + 0.009,
                "call": "c",
                "worker": "w",
                "batch": i,
                "busy_s": 0.009,
                "outcome": "finished",
            }
        )
    html = render_run_report(run_store, RUN, timeline, [])
    assert len(html) < 200_000
    assert html.count("c w: finished") < 100


def test_generated_at_is_shown(run_store) -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert "generated 2026-01-02 03:04:05 UTC" in render_run_report(
        run_store, RUN, generated_at=when
    )


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        pytest.param(0, 4, [0, 1, 2, 3, 4], id="small"),
        pytest.param(0, 100, [0, 20, 40, 60, 80, 100], id="hundred"),
        pytest.param(0, 0.001, [0, 0.0002, 0.0004, 0.0006, 0.0008, 0.001], id="tiny"),
    ],
)
def test_nice_ticks(lo: float, hi: float, expected: list[float]) -> None:
    assert nice_ticks(lo, hi) == pytest.approx(expected)


def test_reports_import_neither_airflow_nor_ray() -> None:
    code = (
        "import sys, airflow_provider_rayorch.reports\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('airflow', 'ray'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        pytest.param("{half", "does not parse", id="not-json"),
        pytest.param('{"version": 2, "run_id": "r", "written_at": "t"}', "version", id="version"),
        pytest.param(
            '{"version": 1, "run_id": "r", "written_at": "t", "timeline": {"plot": "x", '
            '"label": "l", "width": 1, "height": 1, "shapes": [{"kind": "rect", "x": 0, '
            '"y": 0, "w": 1, "h": 1, "fill": "red;background:url(x)"}]}}',
            "fill",
            id="not-a-colour",
        ),
    ],
)
def test_damaged_report_data_is_named_and_the_store_still_shows(
    run_store, tmp_path, content: str, says: str
) -> None:
    from airflow_provider_rayorch.reports import ReportDataError, read_report_data

    (tmp_path / "runs" / RUN / "report.json").write_text(content)
    with pytest.raises(ReportDataError, match=says) as raised:
        read_report_data(run_store, RUN)
    assert "report.json" in str(raised.value)
    html = render_run_report(run_store, RUN)
    assert "report.json does not parse" in html
    assert 'data-state="success"' in html
    assert len(parse(html).rows["sources-table"]) == 11
