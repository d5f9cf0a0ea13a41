"""After a repair the report and the plugin pages show each microbatch's current
state and its attempt history, never the first attempt's stale data, as
the user sees them. The run store is built by the real store functions."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.rayorch.summary import run_summary
from airflow_provider_rayorch.reports import read_run_state, render_run_report, write_run_report
from airflow_provider_rayorch.runs.attempts import write_repair
from airflow_provider_rayorch.runs.boundary import plain

from .conftest import RUN, make_run, make_timeline
from .test_report import parse

if TYPE_CHECKING:
    from pathlib import Path

    from airflow_provider_rayorch.runs.store import RunStore

pytestmark = pytest.mark.timeout(120)

REFUSAL = "plan changed: the UDF import path of stage 'ocr' is pkg.b:Ocr, was pkg.a:Ocr"


def _repair_mb0(store: RunStore) -> None:
    """What a committed repair of microbatch 0 (source 3 failed, now present) leaves."""
    old = plain(store.manifest_record(RUN, 0))
    assert old is not None
    rows = [("present", None, {"text": f"t{s}"}) for s in range(4)]
    files = {"out": store.write_outputs(RUN, 0, "out", 0, rows, attempt=2)}
    sources = {"total": 4, "present": 4, "dropped": 0, "failed": 0, "suppressed": 0}
    first = {
        "attempt": 1,
        "at": "2026-01-01T10:00:00+00:00",
        "kind": "run",
        "job_id": None,
        "repaired_sources": [],
        "sources": dict(old["sources"]),
        "state": old["state"],
        "fingerprint": old.get("fingerprint"),
        "elapsed_s": old.get("elapsed_s"),
    }
    second = {
        "attempt": 2,
        "at": "2026-01-01T11:00:00+00:00",
        "kind": "repair",
        "job_id": "repair-job-1",
        "repaired_sources": [3],
        "sources": {"total": 1, "present": 1, "dropped": 0, "failed": 0, "suppressed": 0},
        "state": "success",
        "fingerprint": old.get("fingerprint"),
        "elapsed_s": 0.2,
    }
    manifest = {
        **old,
        "state": "success",
        "sources": sources,
        "failures": [],
        "attempt": 2,
        "files": files,
        "attempts": [first, second],
        "outputs": {**old["outputs"], "uri": files["out"].rsplit("/", 1)[0], "rows": 4},
    }
    store.commit_microbatch(RUN, 0, manifest)
    write_repair(store, RUN, 0, attempt=2, status="committed", job_id="repair-job-1")
    write_repair(store, RUN, 1, attempt=2, status="refused", job_id=None, message=REFUSAL)


@pytest.fixture
def repaired(tmp_path: Path) -> tuple[RunStore, str]:
    """A finished run whose report was written, then mb 0 repaired and mb 1 refused
    (the run task has not rewritten the run manifest yet)."""
    store = make_run(tmp_path / "runs", max_failed_ratio=0.1)
    summary = run_summary(
        [m.to_dict() for m in store.manifest_records(RUN)],
        elapsed_s=4.0,
        run_id=RUN,
        max_failed_ratio=0.1,
    )
    store.write_run_manifest(RUN, summary)
    assert read_run_state(store, RUN).state == "failed"  # 2 of 10 sources > 0.1
    timeline, calls, timings = make_timeline()
    write_run_report(store, RUN, timeline, calls, microbatches=timings)
    before = parse(render_run_report(store, RUN)).rows["microbatch-table"][1]
    assert before[2] == "failed"  # mb 0 had a failed source
    stored = plain(store.job_state_record(RUN))
    _repair_mb0(store)
    return store, "" if stored is None else str(stored)


def _check_repaired(html: str) -> None:
    page = parse(html)
    mbs = page.rows["microbatch-table"]
    assert mbs[1][:3] == ["mb 0", "0-3", "success"]
    attempt_col = mbs[0].index("attempt")
    assert mbs[1][:3] == ["mb 0", "0-3", "success"]
    assert mbs[1][attempt_col] == "2"
    assert mbs[2][attempt_col] == "1"
    # the sources table reads attempt 2's file: source 3 is present now
    sources = {r[0]: r for r in page.rows["sources-table"][1:]}
    assert "present" in sources["3"]
    assert "doc[3]: cannot open" not in html
    history = page.rows["attempts-table"]
    head = history[0]
    assert head[:5] == ["microbatch", "attempt", "kind", "state", "sources repaired"]
    body = [r[:5] for r in history[1:]]
    assert body == [
        ["mb 0", "1", "run", "failed", ""],
        ["mb 0", "2", "repair", "success", "3"],
        ["mb 1", "2", "repair", "refused", ""],
    ]
    refused = history[3]
    assert any("pkg.b:Ocr" in cell for cell in refused)
    assert "2026-01-01 11:00" in " ".join(history[2])


def test_report_rendered_from_the_store_shows_the_repaired_state(repaired) -> None:
    store, _ = repaired
    _check_repaired(render_run_report(store, RUN))


def test_served_report_is_not_the_stale_first_attempt(repaired) -> None:
    from airflow_provider_rayorch.plugins.app import report_html
    from airflow_provider_rayorch.plugins.resolve import RunRef

    store, _ = repaired
    html = report_html(RunRef(store.uri, RUN))
    assert html is not None
    _check_repaired(html)


def test_run_state_follows_the_repair_before_the_run_task_rewrites(repaired) -> None:
    """mb 0 repaired, mb 1 (suppressed) refused: the counts as they are now decide
    (1 of 10 sources is not above 0.1)."""
    store, _ = repaired
    state = read_run_state(store, RUN)
    assert state.state == "success"
    assert state.message is not None
    assert "mb 0" in state.message
    assert "refused" in state.message


def test_runs_page_shows_the_repairs(repaired) -> None:
    from airflow_provider_rayorch.plugins import pages
    from airflow_provider_rayorch.plugins.resolve import TaskRun

    store, _ = repaired
    run = TaskRun(
        dag_id="d",
        run_id="manual",
        task_id="run",
        map_index=-1,
        rayorch_run_id=RUN,
        store_uri=store.uri,
        when=None,
    )
    html = pages.runs_page("runs", [run], states={RUN: read_run_state(store, RUN)})
    assert "repair" in html
    assert "attempt 2" in html


def test_a_committed_repair_never_reads_running(tmp_path: Path) -> None:
    """The repair job commits and writes the kept report before its
    sensor records the repair committed; the record that still says ``running`` is
    older than the commit and must not show."""
    from airflow_provider_rayorch.reports import read_run_report

    store = make_run(tmp_path / "runs", max_failed_ratio=0.1)
    write_repair(store, RUN, 0, attempt=2, status="running", job_id="repair-job-1")
    _repair_mb0(store)
    write_repair(store, RUN, 0, attempt=2, status="running", job_id="repair-job-1")
    write_run_report(store, RUN)  # what the repair's driver does after its commit
    html = read_run_report(store, RUN)
    assert html is not None
    history = [r[:4] for r in parse(html).rows["attempts-table"][1:]]
    assert ["mb 0", "2", "repair", "success"] in history
    assert "running" not in " ".join(" ".join(r) for r in history)
    state = read_run_state(store, RUN)
    assert state.message is not None
    assert "mb 0 attempt 2 running" not in state.message
