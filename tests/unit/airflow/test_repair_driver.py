"""The driver's repair mode on the real engine's reference executor (no Ray)."""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING

import pytest
from repair_plans import write_flaky_plan

from airflow_provider_rayorch import job
from airflow_provider_rayorch.rayorch.errors import DriverError
from airflow_provider_rayorch.runs import driver
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.exit_codes import EXIT_PLAN_CHANGED

if TYPE_CHECKING:
    from pathlib import Path

    from airflow_provider_rayorch.runs.store import RunStore

pytestmark = pytest.mark.timeout(60)


def _plan(tmp_path: Path, n: int = 6, size: int = 3) -> tuple[RunStore, Path]:
    return write_flaky_plan(tmp_path, "run", sources=n, batch_size=size)


def _calls(state: Path) -> list[int]:
    log = state / "calls.log"
    return [int(x) for x in log.read_text().split()] if log.exists() else []


def _first_run_with_failures(tmp_path: Path) -> tuple[RunStore, Path]:
    store, state = _plan(tmp_path)
    (state / "fail-1").touch()  # a page of source 1 fails: source 1 SUPPRESSED
    (state / "fail-root-4").touch()  # source 4 itself FAILS
    summary = driver.run_plan(store, "run", report=job.write_report)
    assert summary["sources"]["present"] == 4
    (state / "calls.log").unlink()
    return store, state


def test_a_repair_reruns_only_failed_sources_and_replaces_the_manifest(tmp_path: Path) -> None:
    store, state = _first_run_with_failures(tmp_path)
    before = plain(store.manifest_record("run", 0))
    assert before["state"] == "failed"
    assert before["attempt"] == 1
    os.remove(state / "fail-1")

    (manifest,) = driver.repair_plan(store, "run", "0")

    assert _calls(state) == [1, 1]  # both pages of source 1; PRESENT sources 0, 2: no call
    assert manifest == plain(store.manifest_record("run", 0))
    assert manifest["state"] == "success"
    assert manifest["attempt"] == 2
    assert manifest["sources"] == {
        "total": 3,
        "present": 3,
        "dropped": 0,
        "failed": 0,
        "suppressed": 0,
    }
    assert manifest["failures"] == []
    assert "/mb-00000/attempt-2/" in manifest["files"]["out"]
    assert [a["attempt"] for a in manifest["attempts"]] == [1, 2]
    assert manifest["attempts"][0]["state"] == "failed"
    assert manifest["attempts"][1]["repaired_sources"] == [1]
    assert json.loads(json.dumps(manifest)) == manifest
    rows = store.read_outputs("run")
    assert [r["value"] for r in rows] == [[0, 2], [20, 22], [40, 42], [60, 62], None, [100, 102]]
    assert plain(store.manifest_record("run", 1))["attempt"] == 1  # another microbatch: untouched


def test_a_source_that_still_fails_keeps_its_global_index_and_cause(tmp_path: Path) -> None:
    store, state = _first_run_with_failures(tmp_path)
    (manifest,) = driver.repair_plan(store, "run", "1")
    assert _calls(state) == []  # source 4 fails before any page exists
    assert manifest["attempt"] == 2
    assert manifest["failures"] == [
        {"source": 4, "outcome": "failed", "cause": "doc[4]: service down"}
    ]
    assert manifest["state"] == "failed"


def test_repair_all_and_the_whole_run_manifest(tmp_path: Path) -> None:
    store, state = _first_run_with_failures(tmp_path)
    for marker in ("fail-1", "fail-root-4"):
        os.remove(state / marker)
    manifests = driver.repair_plan(store, "run", "all", write_run_manifest=True)
    assert sorted(m["microbatch"]["index"] for m in manifests) == [0, 1]
    assert sorted(_calls(state)) == [1, 1, 4, 4]
    run = plain(store.run_manifest_record("run"))
    assert run["state"] == "success"
    assert run["sources"]["present"] == 6


def test_a_changed_batch_size_is_allowed(tmp_path: Path) -> None:
    store, state = _first_run_with_failures(tmp_path)
    os.remove(state / "fail-1")
    (state / "config.json").write_text(json.dumps({"batch_size": 1}))
    (manifest,) = driver.repair_plan(store, "run", "0")
    assert manifest["state"] == "success"


def test_a_changed_udf_import_path_is_refused_naming_the_module(tmp_path: Path) -> None:
    store, state = _first_run_with_failures(tmp_path)
    (state / "config.json").write_text(json.dumps({"udf": "OtherPages"}))
    with pytest.raises(DriverError) as info:
        driver.repair_plan(store, "run", "0")
    assert info.value.exit_code == EXIT_PLAN_CHANGED
    assert "module 'pages': udf changed from" in str(info.value)
    assert "repair_pipelines:OtherPages" in str(info.value)
    assert plain(store.manifest_record("run", 0))["attempt"] == 1  # nothing committed
    assert _calls(state) == []


def test_an_uncommitted_microbatch_cannot_be_repaired(tmp_path: Path) -> None:
    store, _ = _plan(tmp_path)
    with pytest.raises(DriverError, match="microbatch 0 is not committed"):
        driver.repair_plan(store, "run", "0")


def test_the_stored_report_shows_the_repair_not_the_first_attempt(tmp_path: Path) -> None:
    """What the user sees: report.html after a repair of microbatch 0."""
    from airflow_provider_rayorch.reports import read_run_report

    store, state = _first_run_with_failures(tmp_path)
    first = read_run_report(store, "run")
    assert first is not None
    assert 'id="attempts-table"' not in first
    os.remove(state / "fail-1")

    driver.repair_plan(store, "run", "0", report=job.write_report)

    html = read_run_report(store, "run")
    assert html is not None
    assert 'id="attempts-table"' in html  # the attempt history: run, then repair
    row = re.search(r'<tr id="mb-0">.*?</tr>', html)
    assert row is not None
    assert "state-success" in row.group(0)  # the first attempt's "failed" is gone
    assert '<tr class="attempt-repair"><td>mb 0</td><td class="num">2</td>' in html


def test_a_repair_driver_leaves_the_run_state_record_to_the_run_driver(tmp_path: Path) -> None:
    """The run's state is the run driver's record; a repair keeps its own records."""
    from airflow_provider_rayorch.runs.run_state import read_run_state_record

    store, state = _first_run_with_failures(tmp_path)
    before = read_run_state_record(store, "run")
    assert before is not None
    assert before.state == "succeeded"
    os.remove(state / "fail-1")
    argv = ["--run-store", store.uri, "--run-id", "run", "--repair", "0"]
    assert driver.main(argv) == 0
    assert plain(store.manifest_record("run", 0))["attempt"] == 2
    assert read_run_state_record(store, "run") == before
