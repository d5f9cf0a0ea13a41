"""True run states in the report and the plugin pages; small runs read well.

A run whose Ray job never started, failed or was stopped says so (with the stored
message), never ``running``; a run nobody has heard of for a long time stops
claiming to run. Plots of runs without data show an empty state, and small runs
(a few ms of work) keep distinct axis labels and non-zero busy figures.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_rayorch.reports import render_run_report, write_run_report

from .conftest import RUN, make_run, make_timeline
from .test_report import parse

if TYPE_CHECKING:
    from pathlib import Path

    from airflow_provider_rayorch.runs.store import RunStore

pytestmark = pytest.mark.timeout(60)

REFUSED = "submit refused: HTTP 401: Unauthorized: Missing authentication token"


def _age(store: RunStore, hours: float, run_id: str = RUN) -> None:
    """Make every file of the run, and its job-state record's time, look ``hours`` old."""
    then = datetime.now(UTC) - timedelta(hours=hours)
    record = os.path.join(store.root, run_id, "job_state.json")
    if os.path.exists(record):
        with open(record, encoding="utf-8") as f:
            data = json.load(f)
        with open(record, "w", encoding="utf-8") as f:
            json.dump({**data, "at": then.isoformat()}, f)
    for folder, _, files in os.walk(os.path.join(store.root, run_id)):
        for name in files:
            os.utime(os.path.join(folder, name), (then.timestamp(), then.timestamp()))


def _header_state(html: str) -> str:
    found = re.search(r'<body[^>]*data-state="([^"]*)"', html)
    assert found is not None
    return found.group(1)


def _plot(html: str, name: str) -> str:
    found = re.search(rf'<svg[^>]*data-plot="{name}".*?</svg>', html, re.S)
    assert found is not None, f"no {name} plot"
    return found.group(0)


def _axis_labels(svg: str) -> dict[tuple[str, str], list[str]]:
    """Numeric tick labels grouped by axis: same y (x axis) or same x (y axis)."""
    axes: dict[tuple[str, str], list[str]] = defaultdict(list)
    for x, y, anchor, text in re.findall(
        r'<text x="([\d.]+)" y="([\d.]+)" text-anchor="(\w+)" font-size="10"[^>]*>([^<]*)</text>',
        svg,
    ):
        if not re.fullmatch(r"-?[\d.]+(k|\s?(ms|s|µs))?", text):
            continue
        key = ("x", y) if anchor == "middle" else ("y", x)
        axes[key].append(text)
    return axes


def _assert_distinct_ticks(svg: str) -> None:
    for axis, labels in _axis_labels(svg).items():
        assert len(labels) == len(set(labels)), f"{axis} axis repeats a tick label: {labels}"


# -- a run whose job never started, died or was stopped -------------------


def test_never_started_run_reports_not_started_with_the_message(tmp_path: Path) -> None:
    store = make_run(tmp_path, committed=(), finished=False)
    store.write_job_state(RUN, "NOT_STARTED", REFUSED)
    html = render_run_report(store, RUN)
    assert _header_state(html) == "not_started"
    assert REFUSED in html
    assert ">running<" not in html


@pytest.mark.parametrize(
    ("status", "state"),
    [pytest.param("FAILED", "failed", id="died"), pytest.param("STOPPED", "stopped", id="stopped")],
)
def test_ended_job_without_run_manifest_shows_its_end(
    tmp_path: Path, status: str, state: str
) -> None:
    store = make_run(tmp_path, committed=(0,), finished=False)
    store.write_job_state(RUN, status, "Job entrypoint command failed with exit code 1")
    html = render_run_report(store, RUN)
    assert _header_state(html) == state
    assert "exit code 1" in html
    rows = parse(html).rows["microbatch-table"][1:]
    # the microbatches the job never reached are not waiting for anything
    assert [r[2] for r in rows] == ["failed", "not run", "not run"]


def test_run_without_any_news_for_long_is_no_longer_running(tmp_path: Path) -> None:
    store = make_run(tmp_path, committed=(0,), finished=False)
    _age(store, hours=3)
    html = render_run_report(store, RUN)
    assert _header_state(html) == "unknown"
    assert "no progress recorded" in html


def test_recent_activity_without_job_status_is_running(tmp_path: Path) -> None:
    store = make_run(tmp_path, committed=(0,), finished=False)
    assert _header_state(render_run_report(store, RUN)) == "running"


def test_stale_terminal_record_gives_way_to_newer_progress(tmp_path: Path) -> None:
    """A retry resumed the run after the first submit was refused: the old record is stale."""
    store = make_run(tmp_path, committed=(), finished=False)
    store.write_job_state(RUN, "NOT_STARTED", REFUSED)
    _age(store, hours=2)
    make_run(tmp_path, committed=(0,), finished=False)  # a later job commits mb 0
    assert _header_state(render_run_report(store, RUN)) == "running"


# -- the plugin: report tab and runs page ----------------------------------------------


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch):
    """The plugin app with access checks passed and the metadata DB replaced."""
    from fastapi.testclient import TestClient

    from airflow_provider_rayorch.plugins import app as plugin_app

    monkeypatch.setattr(plugin_app, "create_session", nullcontext)
    plugin_app.app.dependency_overrides[plugin_app._READ_TI.dependency] = lambda: None
    yield TestClient(plugin_app.app), plugin_app
    plugin_app.app.dependency_overrides.clear()


def test_report_tab_shows_the_end_of_a_job_that_died_after_a_live_report(
    tmp_path: Path, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_provider_rayorch.plugins.resolve import RunRef

    http, plugin_app = client
    store = make_run(tmp_path, committed=(0,), finished=False)
    timeline, calls, timings = make_timeline()
    write_run_report(store, RUN, timeline, calls, microbatches=timings[:1])  # a live report
    store.write_job_state(RUN, "FAILED", "the driver died: node lost")
    monkeypatch.setattr(plugin_app.resolve, "find_for_ti", lambda *a: RunRef(store.uri, RUN, None))
    html = http.get("/ti", params={"dag_id": "d", "run_id": "r", "task_id": "t"}).text
    assert _header_state(html) == "failed"
    assert "the driver died: node lost" in html
    assert 'data-plot="timeline"' in html  # still the stored report, with its timeline


def test_runs_page_shows_true_states_and_messages(
    tmp_path: Path, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_provider_rayorch.plugins.resolve import TaskRun

    http, plugin_app = client
    root = tmp_path / "runs"
    make_run(root, committed=(), finished=False, run_id="r0")
    store = make_run(root, committed=(0,), finished=False, run_id="r1")
    make_run(root, committed=(0,), finished=False, run_id="r2")
    make_run(root, run_id="r3")
    store.write_job_state("r0", "NOT_STARTED", REFUSED)
    _age(store, hours=5, run_id="r1")
    runs = [TaskRun("d", "r", f"t{i}", -1, f"r{i}", store.uri) for i in range(4)]
    monkeypatch.setattr(plugin_app.resolve, "find_for_dag_run", lambda *a: runs)
    page = parse(http.get("/dagrun", params={"dag_id": "d", "run_id": "r"}).text)
    rows = {r[2]: r for r in page.rows["runs"][1:]}
    assert rows["t0"][4] == "not started"
    assert REFUSED in " ".join(rows["t0"])
    assert rows["t1"][4] == "unknown"
    assert rows["t2"][4] == "running"
    assert rows["t3"][4] == "success"


# -- small and empty runs ---------------------------------------------------------------


def test_run_without_data_shows_empty_plots_not_zero_axes(tmp_path: Path) -> None:
    store = make_run(tmp_path, committed=(), finished=False)
    store.write_job_state(RUN, "NOT_STARTED", REFUSED)
    html = render_run_report(store, RUN)
    for name in ("microbatches", "completion"):
        svg = _plot(html, name)
        _assert_distinct_ticks(svg)
        assert "no microbatch committed yet" in svg
        assert "seconds since the run started" not in svg  # no time axis without times


def _small_timeline() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """A measured 6-document run of the example pipeline: 15 ms, UDFs busy for µs."""
    timeline: list[dict[str, Any]] = []
    batches = [  # call, worker, dispatched, reported, busy_s
        ("split", "split#1", 0.001276, 0.0032, 5e-06),
        ("split", "split#1", 0.0032, 0.00589, 4e-06),
        ("recognize", "recognize#2", 0.0032, 0.006358, 1.3e-05),
        ("recognize", "recognize#2", 0.006358, 0.008512, 6e-06),
        ("assemble", "assemble#3", 0.006358, 0.011012, 1.3e-05),
        ("assemble", "assemble#3", 0.011012, 0.01523, 9e-06),
    ]
    for i, (call, worker, sent, done, busy) in enumerate(batches):
        common = {"call": call, "worker": worker, "batch": i + 1}
        timeline.append({"event": "dispatch", "t": sent, "size": 4, "queued": 0, **common})
        timeline.append(
            {"event": "report", "t": done, "busy_s": busy, "outcome": "finished", **common}
        )
    calls = [
        {"name": name, "replicas": replicas, "rpcs": 2, "busy_s": busy, "batch_sizes": {"4": 2}}
        for name, replicas, busy in (
            ("split", 1, 9e-06),
            ("recognize", 2, 1.9e-05),
            ("assemble", 1, 2.2e-05),
        )
    ]
    timings = [
        {"index": 0, "started_s": 0.001276, "finished_s": 0.011012},
        {"index": 1, "started_s": 0.001276, "finished_s": 0.01523},
        {"index": 2, "started_s": 0.0032, "finished_s": 0.01523},
    ]
    return timeline, calls, timings


def test_small_run_has_distinct_tick_labels(tmp_path: Path) -> None:
    store = make_run(tmp_path)
    timeline, calls, timings = _small_timeline()
    html = render_run_report(store, RUN, timeline, calls, microbatches=timings)
    for name in ("microbatches", "completion", "timeline", "queue"):
        _assert_distinct_ticks(_plot(html, name))
    assert "milliseconds since the run started" in _plot(html, "timeline")
    # every dispatch found its queue empty: said in words, not as a line on the axis
    assert "no Grain ever waited" in _plot(html, "queue")


def test_small_run_shows_busy_time_and_utilisation_not_zero(tmp_path: Path) -> None:
    """Microseconds of UDF time in a 15 ms run never read as "0" and "0%"."""
    store = make_run(tmp_path)
    timeline, calls, timings = _small_timeline()
    html = render_run_report(store, RUN, timeline, calls, microbatches=timings)
    rows = {r[0]: r for r in parse(html).rows["calls-table"][1:]}
    head = parse(html).rows["calls-table"][0]
    busy = next(i for i, h in enumerate(head) if h.startswith("busy"))
    util = head.index("utilization")
    assert rows["assemble"][busy] == "22 µs"
    assert rows["split"][busy] == "9 µs"
    assert rows["assemble"][util] == "0.14%"  # 22 µs of 15.23 ms
    lanes = re.findall(r"\u00b7 [\w#]+ \(([^)]*)\)", _plot(html, "timeline"))
    assert lanes
    assert "0%" not in lanes


def test_damaged_job_state_record_does_not_hide_the_run(tmp_path: Path) -> None:
    from airflow_provider_rayorch.reports import read_run_state

    store = make_run(tmp_path, committed=(0,), finished=False)
    (tmp_path / RUN / "job_state.json").write_text("{half")
    state = read_run_state(store, RUN)
    assert state.state == "running"
    assert state.message is not None
    assert "job_state.json is not JSON" in state.message
    assert "job_state.json is not JSON" in render_run_report(store, RUN)


# -- a finished run never says its job runs -----------------------


@pytest.mark.parametrize(
    ("ratio", "repaired", "state"),
    [
        pytest.param(0.5, False, "success", id="success"),
        pytest.param(0.0, False, "failed", id="failed"),
        pytest.param(0.1, True, "success", id="repaired"),
    ],
)
def test_a_finished_run_never_says_its_job_runs(
    tmp_path: Path, client: Any, monkeypatch: pytest.MonkeyPatch, ratio: float, repaired: bool,
    state: str,
) -> None:  # fmt: skip
    """The submit records RUNNING, the job commits and writes its run manifest: the
    state, the kept report, the report tab and the runs page say the run's end, none
    says running."""
    from airflow_provider_rayorch.common.liveness import record_submitted
    from airflow_provider_rayorch.plugins.resolve import RunRef, TaskRun
    from airflow_provider_rayorch.rayorch.summary import run_summary
    from airflow_provider_rayorch.reports import read_run_report, read_run_state

    from .test_repaired_report import _repair_mb0

    job = "rayorch-d-t-0123-try1"
    store = make_run(tmp_path, committed=(), finished=False, max_failed_ratio=ratio)
    record_submitted(store, RUN, job)  # the submit
    _age(store, hours=0.1)
    make_run(tmp_path, finished=False, max_failed_ratio=ratio)  # the job's commits
    summary = run_summary(
        [m.to_dict() for m in store.manifest_records(RUN)],
        elapsed_s=1.0,
        run_id=RUN,
        max_failed_ratio=ratio,
    )
    store.write_run_manifest(RUN, summary)
    timeline, calls, timings = make_timeline()
    write_run_report(store, RUN, timeline, calls, microbatches=timings)  # the driver's last
    if repaired:  # minutes later, after the job ended
        _age(store, hours=0.05)
        _repair_mb0(store)
        write_run_report(store, RUN)  # the repair's driver
    decided = read_run_state(store, RUN)
    assert (decided.state, decided.job_status) == (state, None)
    assert "running" not in (decided.message or "")
    http, plugin_app = client
    monkeypatch.setattr(plugin_app.resolve, "find_for_ti", lambda *a: RunRef(store.uri, RUN, None))
    run = TaskRun("d", "r", "t", -1, RUN, store.uri)
    monkeypatch.setattr(plugin_app.resolve, "find_for_dag_run", lambda *a: [run, run])
    kept = read_run_report(store, RUN)
    assert kept is not None
    tab = http.get("/ti", params={"dag_id": "d", "run_id": "r", "task_id": "t"}).text
    runs = http.get("/dagrun", params={"dag_id": "d", "run_id": "r"}).text
    for html in (kept, tab):
        assert _header_state(html) == state
    assert parse(runs).rows["runs"][1][4] == state
    for html in (kept, tab, runs):
        assert "RUNNING" not in html
        assert f"{job} submitted" not in html
