"""Issue 29's goals against the two Ray Data ``@task``s, their table on the page, and
the gathering task's per-page work (made-up medians; no deployment)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from benchmarks.airflow_path.facts import OPERATOR, PATTERN, RAY_DATA, RAY_DATA_GROUPBY
from benchmarks.airflow_path.goals import goals

pytestmark = pytest.mark.timeout(60)

EXAMPLES = Path(__file__).parents[3] / "dags_examples"


def _named(variants: dict[str, tuple[float, float]]) -> dict[str, dict]:
    return {n: {"median": {"total_s": t, "trigger_to_first_commit_s": f}}
            for n, (t, f) in variants.items()}  # fmt: skip


def test_each_provider_variant_is_judged_against_both_tasks_by_its_kind() -> None:
    rows = goals(_named({
        OPERATOR: (8.0, 4.0), PATTERN: (10.0, 4.0), "RayOrchOperator, shared head": (4.0, 2.0),
        RAY_DATA: (10.0, 5.0), RAY_DATA_GROUPBY: (16.0, 8.0),
    }))  # fmt: skip
    got = {(g["variant"], g["baseline"], g["figure"]): (g["ratio"], g["target"], g["met"])
           for g in rows}  # fmt: skip
    assert got[(OPERATOR, RAY_DATA, "total_s")] == (0.8, 0.8, True)
    assert got[(OPERATOR, RAY_DATA_GROUPBY, "total_s")] == (0.5, 0.5, True)
    assert got[(PATTERN, RAY_DATA, "total_s")] == (1.0, 1.0, True)
    assert got[(PATTERN, RAY_DATA, "trigger_to_first_commit_s")] == (0.8, 0.8, True)
    assert got[(PATTERN, RAY_DATA_GROUPBY, "total_s")] == (0.625, 0.65, True)
    assert got[(OPERATOR, RAY_DATA_GROUPBY, "trigger_to_first_commit_s")] == (0.5, 0.5, True)
    shared = ("RayOrchOperator, shared head", RAY_DATA, "total_s")
    assert got[shared] == (0.4, 0.8, True)
    assert len(rows) == 12  # 3 measured provider variants x 2 tasks x 2 figures


def test_a_ratio_above_its_target_is_missed_and_a_missing_task_judges_nothing() -> None:
    rows = goals(_named({OPERATOR: (9.0, 4.5), RAY_DATA: (10.0, 5.0)}))
    over = next(g for g in rows if g["baseline"] == RAY_DATA and g["figure"] == "total_s")
    assert (over["ratio"], over["met"]) == (0.9, False)
    gathering = [g for g in rows if g["baseline"] == RAY_DATA_GROUPBY]
    assert gathering
    assert all(g["ratio"] is None and g["met"] is None for g in gathering)


def test_the_page_shows_the_goals_and_what_was_not_measured(tmp_path: Path) -> None:
    from benchmarks.report.airflow_path import PAGE, PLOT, write_page

    variants = _named({OPERATOR: (8.0, 4.0), RAY_DATA: (10.0, 5.0)})
    for v in variants.values():
        v.update(runs=[], failed=0)
    result = {
        "documents": 24, "input_batch_size": 8, "microbatches": 3, "runs_per_variant": 3,
        "variants": variants, "goals": goals(variants),
        "skipped": {RAY_DATA_GROUPBY: "No module named 'pandas'"},
        "airflow_settings": {}, "loadavg": {"start": [1], "end": [1]},
    }  # fmt: skip
    (tmp_path / PLOT).write_bytes(b"a plot of another run")
    write_page(result, tmp_path, plots=False)
    page = (tmp_path / PAGE).read_text()
    head = f"| variant | run success / {RAY_DATA} | first commit / {RAY_DATA} |"
    assert head in page
    assert f"| {OPERATOR} | 0.80x (<= 0.8) met | 0.80x (<= 0.8) met |" in page
    assert f"Not measured: {RAY_DATA_GROUPBY}: No module named 'pandas'." in page
    assert not (tmp_path / PLOT).exists()
    assert PLOT not in page


def test_the_gathering_task_assembles_each_document_like_the_whole_document_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "path", [str(EXAMPLES), *sys.path])
    from benchmarks.airflow_path.work import (
        _assemble_document,
        _pages,
        _prepare_batch,
        _recognize_pages,
        document_text,
    )

    docs = {f"/in/doc-{i}.txt": document_text(i).encode() for i in range(6)}
    whole = _prepare_batch({"bytes": list(docs.values()), "path": list(docs)})
    pages = [p for path, data in docs.items() for p in _pages({"path": path, "bytes": data})]
    random.Random(3).shuffle(pages)  # Ray Data keeps no page order across the groupby
    recognized = _recognize_pages({k: [p[k] for p in pages] for k in ("doc", "ordinal", "page")})
    gathered = {}
    for path in docs:
        picked = [k for k, d in enumerate(recognized["doc"]) if d == path]
        group = {key: [col[k] for k in picked] for key, col in recognized.items()}
        record = _assemble_document(group)
        gathered[record["source"][0]] = {k: record[k][0] for k in ("markdown", "pages", "words")}
    for k, path in enumerate(whole["source"]):
        expected = {c: whole[c][k] for c in ("markdown", "pages", "words")}
        assert gathered[path] == expected
    assert max(r["pages"] for r in gathered.values()) == 4


def test_the_page_links_the_plot_it_drew(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    from benchmarks.report.airflow_path import PAGE, PLOT, write_page

    variants = _named({OPERATOR: (8.0, 4.0), PATTERN: (9.0, 5.0)})
    for v in variants.values():
        v.update(runs=[], failed=0)
    result = {
        "documents": 24, "input_batch_size": 8, "microbatches": 3, "runs_per_variant": 1,
        "variants": variants, "airflow_settings": {}, "loadavg": {"start": [1], "end": [1]},
    }  # fmt: skip
    write_page(result, tmp_path)
    assert (tmp_path / PLOT).read_bytes().startswith(b"\x89PNG")
    assert f"![{PLOT}]({PLOT})" in (tmp_path / PAGE).read_text()


def test_the_readme_summary_counts_the_goals_met() -> None:
    from benchmarks.report.airflow_path import section

    variants = _named({OPERATOR: (8.0, 4.0), RAY_DATA: (9.0, 5.0)})
    for v in variants.values():
        v.update(runs=[], failed=0)
    lines = section({"variants": variants, "goals": goals(variants)})
    assert lines[0] == "## The Airflow path (issues 21, 29)"
    assert "Issue 29's goals against the Ray Data tasks: 1 of 2 met." in lines
