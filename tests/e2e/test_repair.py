"""Repair of a failed microbatch through the real scheduler and the REST API.

``rayorch_repair`` runs ``repair_pipelines:Flaky`` (a page stage that returns
``RecordFailure`` while a marker file exists, and logs every source it sees) over 6
sources in 2 microbatches on a loopback head. A marker makes the first attempt fail;
the test removes it and clears the red microbatch with its downstream through the
REST API: setup and teardown come along, so the repair runs on a new head.

``rayorch_resume`` runs the same pipeline over 16 sources in 8 microbatches with
automatic retries; the resume test SIGKILLs the run's driver process once two
microbatches committed, and the retries resume the run with one new job.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest
from browser import expand_grid
from e2e_helpers import ROOT
from e2e_runs import failure_digest, start_runs
from ui_shots import (  # noqa: F401 (a fixture)
    Shots,
    assert_surfaces_say,
    report_path,
    run_path,
    shots_fixture,
)

from airflow_provider_rayorch.runs.store import RunStore, read_summary_outputs

if TYPE_CHECKING:
    from pathlib import Path

    from deployment import Deployment
    from rest import AirflowRest

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

DAG_ID = "rayorch_repair"
MB = "docs.microbatch"
FILES = [
    ROOT / "tests" / "e2e" / "repair_dags" / "rayorch_repair.py",
    # the pipeline the DAG names; the dags folder is on the workers' (and head's) path
    ROOT / "tests" / "unit" / "airflow" / "repair_pipelines.py",
]


@pytest.fixture(scope="module")
def repair_dag(airflow_deployment: Deployment, airflow_rest: AirflowRest) -> str:
    """The session deployment, also serving ``rayorch_repair``."""
    for path in FILES:
        link = airflow_deployment.dags_folder / path.name
        if not link.exists():
            link.symlink_to(path)
    airflow_rest.wait_for_dag(DAG_ID, timeout=120)
    airflow_rest.unpause(DAG_ID)
    return DAG_ID


def _state_dir(root: Path, name: str, *markers: str) -> Path:
    state = root / name
    state.mkdir()
    for marker in markers:
        (state / marker).touch()
    return state


def _calls(state: Path) -> list[int]:
    log = state / "calls.log"
    return sorted(int(x) for x in log.read_text().split()) if log.exists() else []


def _first_run(rest: AirflowRest, state: Path) -> tuple[str, dict[tuple[str, int], Any]]:
    run_id = rest.trigger(DAG_ID, conf={"state_dir": str(state)})["dag_run_id"]
    run = rest.wait_for_run(DAG_ID, run_id, 200)
    assert run["state"] == "failed", failure_digest(rest, DAG_ID, run_id)
    return run_id, rest.task_instances(DAG_ID, run_id)


def _clear_and_wait(rest: AirflowRest, run_id: str, index: int) -> dict[tuple[str, int], Any]:
    """Clear one microbatch with its downstream; wait until that try and the run task's
    next try have ended, and the DAG run with them."""
    before = rest.task_instances(DAG_ID, run_id)
    tries = {key: ti["try_number"] for key, ti in before.items()}
    cleared = rest.clear(DAG_ID, run_id, [(MB, index)], include_downstream=True)
    names = {(t["task_id"], t["map_index"]) for t in cleared}
    assert {(MB, index), ("docs.run", -1), ("docs.ray_head", -1)} <= names, names

    def done() -> dict[tuple[str, int], Any] | None:
        tis = rest.task_instances(DAG_ID, run_id)
        ends = ("success", "failed", "upstream_failed")
        for key in ((MB, index), ("docs.run", -1)):
            if tis[key]["try_number"] <= tries[key] or tis[key]["state"] not in ends:
                return None
        run = rest.run(DAG_ID, run_id)
        return tis if run["state"] in ("success", "failed") else None

    return dict(rest.wait(done, 200, f"the repair of microbatch {index} to end"))


@pytest.fixture(scope="module")
def repaired_run(
    repair_dag: str, airflow_rest: AirflowRest, airflow_deployment: Deployment
) -> dict[str, Any]:
    """A first run whose microbatch 0 fails (source 1's flaky service), then, the service
    back, that microbatch cleared as repair.md says and its repair ended: what each step
    showed (task instances, XComs, UDF calls), for the tests that read it."""
    rest = airflow_rest
    state = _state_dir(airflow_deployment.root, "repair-flaky", "fail-1")
    run_id, first = _first_run(rest, state)
    seen: dict[str, Any] = {"run_id": run_id, "first": first, "first_calls": _calls(state)}
    seen["red"] = rest.xcom(DAG_ID, run_id, MB, map_index=0)
    seen["failed"] = rest.xcom(DAG_ID, run_id, "docs.run", key="rayorch_summary")
    # the failed run's surfaces say failed, none says running (checked before the repair)
    assert_surfaces_say(airflow_deployment.url, DAG_ID, run_id, seen["failed"], "failed")

    (state / "fail-1").unlink()  # the service is back
    (state / "calls.log").unlink()
    seen["repaired"] = _clear_and_wait(rest, run_id, 0)
    seen["repair_calls"] = _calls(state)
    return seen


def test_clearing_a_red_microbatch_repairs_only_its_failed_sources(
    repaired_run: dict[str, Any], airflow_rest: AirflowRest, airflow_deployment: Deployment
) -> None:
    rest, run_id = airflow_rest, repaired_run["run_id"]
    tis = repaired_run["first"]
    assert tis[(MB, 0)]["state"] == "failed"  # red: source 1's pages failed
    assert tis[(MB, 1)]["state"] == "success"
    red = repaired_run["red"]
    assert red["sources"]["suppressed"] == 1
    assert [f["source"] for f in red["failures"]] == [1]
    assert "flaky service" in red["failures"][0]["cause"]
    assert repaired_run["first_calls"] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]

    tis = repaired_run["repaired"]
    assert tis[(MB, 0)]["state"] == "success", failure_digest(rest, DAG_ID, run_id)
    assert tis[("docs.run", -1)]["state"] == "success", failure_digest(rest, DAG_ID, run_id)
    assert rest.run(DAG_ID, run_id)["state"] == "success"
    # zero UDF calls for the PRESENT sources 0, 2, 3, 4, 5
    assert repaired_run["repair_calls"] == [1, 1]
    green = rest.xcom(DAG_ID, run_id, MB, map_index=0)
    assert green["state"] == "success"
    assert green["attempt"] == 2
    assert [(a["attempt"], a["state"]) for a in green["attempts"]] == [
        (1, "failed"),
        (2, "success"),
    ]
    assert green["attempts"][1]["repaired_sources"] == [1]
    assert green["failures"] == []
    run = rest.xcom(DAG_ID, run_id, "docs.run")
    assert run["state"] == "success"
    assert run["sources"] == {"total": 6, "present": 6, "dropped": 0, "failed": 0, "suppressed": 0}
    assert [m.get("attempt", 1) for m in run["microbatches"]] == [2, 1]
    assert [(r["index"], r["status"]) for r in run["repairs"]] == [(0, "committed")]
    assert_surfaces_say(airflow_deployment.url, DAG_ID, run_id, run, "success")  # repaired
    rows = read_summary_outputs(run)
    assert [(r["source"], r["outcome"]) for r in rows] == [(i, "present") for i in range(6)]
    assert [r["value"] for r in rows] == [[i * 20, i * 20 + 2] for i in range(6)]


def test_the_ui_shows_the_repaired_microbatch_and_its_attempts(
    repaired_run: dict[str, Any], shots: Shots
) -> None:
    """Screenshots for docs/airflow/repair.md: the grid and the mapped task instances
    after the repair (microbatch 0 green on its second try), and the report's
    'Repairs and attempts' table."""
    run_id = repaired_run["run_id"]
    shots.open(run_path(DAG_ID, run_id), DAG_ID, "docs")
    expand_grid(shots.driver, "ray_head", "submit", "microbatch", "run")
    shots.shot("repair-grid")
    text = shots.open(
        f"{run_path(DAG_ID, run_id)}/tasks/{MB}/mapped", "mb 0: sources 0-2", "mb 1: sources 3-5"
    )
    assert text.lower().count("success") >= 2, text
    shots.shot("repair-mapped")

    shots.open(report_path(DAG_ID, run_id), "RayOrch run report", "Repairs and attempts")
    rows = shots.report_rows("attempts-table")
    assert [[c.lower() for c in row[:4]] for row in rows] == [
        ["mb 0", "1", "run", "failed"],
        ["mb 0", "2", "repair", "success"],
    ], rows
    assert rows[1][4] == "1"  # the sources repaired
    shots.scroll_to(shots.driver.find_element("id", "attempts"))
    shots.shot("repair-report")


def test_a_repair_may_change_batch_sizes_but_not_the_udf(
    repair_dag: str, airflow_rest: AirflowRest, airflow_deployment: Deployment
) -> None:
    rest = airflow_rest
    state = _state_dir(airflow_deployment.root, "repair-changed", "fail-1", "fail-4")
    run_id, tis = _first_run(rest, state)
    assert (tis[(MB, 0)]["state"], tis[(MB, 1)]["state"]) == ("failed", "failed")
    for marker in ("fail-1", "fail-4", "calls.log"):
        (state / marker).unlink()

    (state / "config.json").write_text(json.dumps({"udf": "OtherPages"}))
    tis = _clear_and_wait(rest, run_id, 1)
    assert tis[(MB, 1)]["state"] == "failed"
    log = rest.task_log(DAG_ID, run_id, MB, tis[(MB, 1)]["try_number"], 1)
    assert "refusing to repair" in log
    assert "module 'pages': udf changed from" in log
    assert "repair_pipelines:OtherPages" in log
    assert _calls(state) == []
    assert rest.xcom(DAG_ID, run_id, MB, map_index=1)["attempt"] == 1

    (state / "config.json").write_text(json.dumps({"batch_size": 1}))
    tis = _clear_and_wait(rest, run_id, 0)
    assert tis[(MB, 0)]["state"] == "success", failure_digest(rest, DAG_ID, run_id)
    assert _calls(state) == [1, 1]
    green = rest.xcom(DAG_ID, run_id, MB, map_index=0)
    assert (green["state"], green["attempt"]) == ("success", 2)
    run = rest.xcom(DAG_ID, run_id, "docs.run", key="rayorch_summary")
    assert run["sources"]["present"] == 5  # microbatch 1 is still red
    assert {r["index"]: r["status"] for r in run["repairs"]} == {0: "committed", 1: "refused"}


RESUME_DAG = "rayorch_resume"
RESUME_SOURCES = 16  # 8 microbatches of 2


def _driver_pids(run_id: str) -> list[int]:
    """The Python processes running the driver of RayOrch run ``run_id``
    (``python -m airflow_provider_rayorch.job ... --run-id <run_id>``)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
        except OSError:
            continue
        if (
            argv
            and os.path.basename(argv[0]).startswith("python")
            and "airflow_provider_rayorch.job" in argv
            and run_id in argv
        ):
            found.append(int(entry))
    return found


@pytest.mark.timeout(1200)  # includes starting the deployment
def test_a_driver_killed_mid_run_is_resumed_by_the_automatic_retries(
    airflow_rest: AirflowRest, airflow_deployment: Deployment
) -> None:
    rest = airflow_rest
    held = [f"hold-{s}" for s in range(4, RESUME_SOURCES)]  # microbatches 2.. wait
    state = _state_dir(airflow_deployment.root, "resume-killed", *held)
    run_id = start_runs(rest, {RESUME_DAG: {"conf": {"state_dir": str(state)}}})[RESUME_DAG]

    def submitted() -> tuple[str, str] | None:
        if rest.run(RESUME_DAG, run_id)["state"] in ("success", "failed"):
            raise AssertionError(failure_digest(rest, RESUME_DAG, run_id))
        ti = rest.task_instances(RESUME_DAG, run_id)[("docs.submit", -1)]
        if ti["state"] != "success":
            return None
        pull = {"dag_id": RESUME_DAG, "run_id": run_id, "task_id": "docs.submit"}
        return rest.xcom(**pull, key="rayorch_run_store"), rest.xcom(**pull, key="rayorch_run_id")

    # a loaded machine starts the loopback head slowly (ray_head may need its retries)
    store_uri, rid = rest.wait(submitted, 600, "the submit task to submit the run's job")
    store = RunStore(store_uri)

    def two_committed() -> list[int] | None:
        if rest.run(RESUME_DAG, run_id)["state"] in ("success", "failed"):
            raise AssertionError(failure_digest(rest, RESUME_DAG, run_id))
        return _driver_pids(rid) if len(store.committed(rid)) >= 2 else None

    pids = rest.wait(two_committed, 300, "two committed microbatches and the driver")
    killed_at = time.time()
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    assert store.committed(rid) == frozenset({0, 1})  # microbatch 2 is held
    for marker in held:
        (state / marker).unlink()

    run = rest.wait_for_run(RESUME_DAG, run_id, 600)
    assert run["state"] == "success", failure_digest(rest, RESUME_DAG, run_id)
    rows = store.read_outputs(rid)
    assert [int(r["source"]) for r in rows] == list(range(RESUME_SOURCES))  # each once
    assert {r["outcome"] for r in rows} == {"present"}, rows
    assert [r["value"] for r in rows] == [[i * 20, i * 20 + 2] for i in range(RESUME_SOURCES)]
    # the committed microbatches were not computed again: each of their sources' two
    # pages ran once; every other page ran (the killed driver's in-flight microbatches
    # may also have run on in its actors until Ray reaped them: their output was not kept)
    calls = Counter(_calls(state))
    assert [calls[s] for s in range(4)] == [2, 2, 2, 2], sorted(calls.elements())
    assert all(calls[s] >= 2 for s in range(4, RESUME_SOURCES)), sorted(calls.elements())
    # one new job resumed the run, whichever task noticed first
    assert len(store.record_names((rid, "resumes"))) == 1
    summary = rest.xcom(RESUME_DAG, run_id, "docs.run")
    assert summary["state"] == "success"
    assert summary["sources"]["present"] == RESUME_SOURCES
    tis = rest.task_instances(RESUME_DAG, run_id)
    assert {tis[(MB, i)]["state"] for i in range(8)} == {"success"}
    assert [tis[(MB, i)]["try_number"] for i in (0, 1)] == [1, 1]  # committed before the kill
    tries = sorted(tis[(MB, i)]["try_number"] for i in range(2, 8))
    ended_at = datetime.fromisoformat(run["end_date"]).timestamp()
    print(  # figures, not assertions
        f"driver killed: the run ended {ended_at - killed_at:.1f}s after the kill; tries of "
        f"the 6 microbatch tasks it had not committed: {tries}"
    )
