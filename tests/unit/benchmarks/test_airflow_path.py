"""The Airflow-path section's figures and page, from a made-up measurement (the
measurement itself needs a deployment: ``python -m benchmarks.airflow_path``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from benchmarks.airflow_path.summary import percentile, summarize_events, summarize_runs

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)


def _run(variant: str, first: float, total: float, state: str = "success") -> dict:
    figures = {"trigger_to_first_commit_s": first, "total_s": total}
    return {"variant": variant, "state": state, "figures": figures}


def test_percentiles_interpolate_between_ranks() -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == 4.8
    assert percentile([7.0], 95) == 7.0
    assert percentile([], 50) is None


def test_medians_per_variant_leave_failed_runs_out() -> None:
    runs = [_run("op", 10, 20), _run("op", 12, 30), _run("op", 0, 0, "failed"), _run("rd", 5, 9)]
    out = summarize_runs(runs)
    assert out["op"]["median"] == {"trigger_to_first_commit_s": 11.0, "total_s": 25.0}
    assert out["op"]["failed"] == 1
    assert out["rd"]["median"]["total_s"] == 9.0


def test_the_event_goals_are_issue_29s_and_issue_21s() -> None:
    files = [{"latency_s": x, "prepare_s": p} for x, p in [(7, 3), (8, 4), (12, 5)]]
    goals = {g["target"]: g for g in summarize_events(files, 5.0)["goals"]}
    p50 = goals["p50 <= poll interval + 3 s (issue 29)"]
    assert (p50["measured_s"], p50["budget_s"], p50["met"]) == (8.0, 8.0, True)
    p95 = goals["p95 <= poll interval + 6 s (issue 29)"]
    assert (p95["measured_s"], p95["budget_s"], p95["met"]) == (11.6, 11.0, False)
    own = goals["p50 <= poll interval + run's own time + 10 s (issue 21)"]
    assert (own["budget_s"], own["met"]) == (19.0, True)
    assert all(g["met"] is None for g in summarize_events([{"latency_s": None}], 5.0)["goals"])


def test_the_page_and_the_readme_summary(tmp_path: Path) -> None:
    from benchmarks.report.airflow_path import PAGE, RAW, section, write_page

    result = {
        "documents": 24,
        "input_batch_size": 8,
        "microbatches": 3,
        "runs_per_variant": 2,
        "variants": summarize_runs(
            [_run("RayOrchOperator", 10, 20), _run("RayOrchOperator", 12, 22)]
        ),
        "events": summarize_events([{"file": "e.txt", "latency_s": 30, "prepare_s": 20}], 5.0),
        "airflow_settings": {"AIRFLOW__X": "1"},
        "loadavg": {"start": [1, 1, 1], "end": [1, 1, 1]},
        "command": "python -m benchmarks.airflow_path --runs 2",
    }
    write_page(result, tmp_path, plots=False)
    page = (tmp_path / PAGE).read_text()
    assert "| RayOrchOperator | 11.00 |" in page
    assert "python -m benchmarks.airflow_path --runs 2" in page
    assert "| p50 <= poll interval + 3 s (issue 29) | 30.00 | 8.00 | **missed** |" in page
    # The raw results come from the same run as the page (the suite writes both).
    assert json.loads((tmp_path / RAW).read_text()) == json.loads(json.dumps(result))
    assert any(PAGE in line for line in section(result))
    assert section({"skipped": "not at this size"}) == []


def test_the_suite_runs_no_deployment_at_the_smoke_size() -> None:
    from benchmarks.airflow_path import run_section
    from benchmarks.sizes import SIZES

    assert "skipped" in run_section(SIZES["smoke"], {}, None)


def test_runs_0_prints_the_event_figures_and_writes_no_page(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    import benchmarks.airflow_path.__main__ as cli

    events = summarize_events([{"file": "e.txt", "latency_s": 9, "prepare_s": 4}], 5.0)
    measured = {"variants": {}, "events": events, "errors": [], "loadavg": {}, "section_s": 1}
    monkeypatch.setattr(cli, "measure", lambda *a, **k: dict(measured))
    monkeypatch.setattr(cli.sys, "argv", ["airflow_path", "--runs", "0"])

    assert cli.main(["--runs", "0", "--out", str(tmp_path)]) == 0

    printed = json.loads(capsys.readouterr().out)
    assert printed["events"]["p50_s"] == 9
    assert printed["command"] == "python -m benchmarks.airflow_path --runs 0"
    assert list(tmp_path.iterdir()) == []
