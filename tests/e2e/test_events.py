"""Event-driven ingestion through the real scheduler and triggerer.

``rayorch_events`` is one of the shared deployment's DAGs (conftest.DEPLOYMENT_DAGS).
Its ``AssetWatcher`` runs ``RayOrchNewSourcesTrigger`` in the real triggerer, on
``<landing>/inbox/*.txt``. Files land before a run, during it, and while the triggerer
is down: it is killed (SIGKILL, no clean shutdown) mid-stream and started again. In
the end every file was prepared by exactly one run: none twice, none skipped.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING, Any

import pytest
from e2e_runs import failure_digest
from ui_shots import Shots, report_path, shots_fixture  # noqa: F401 (a fixture)

from airflow_provider_rayorch.assets.watch_state import COMMITTED_KEY, EMITTED_KEY

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.slow]

DAG_ID = "rayorch_events"
BUSY = ("queued", "running")


def _land(inbox: Path, names: list[str]) -> list[str]:
    """Write each file under a name outside the glob, then rename it into place."""
    uris = []
    for name in names:
        part = inbox / f"{name}.part"
        part.write_text(f"document {name}\fsecond page of {name}")
        os.replace(part, inbox / name)
        uris.append(str(inbox / name))
    return uris


def _runs(rest: Any) -> list[dict[str, Any]]:
    return list(rest.get(f"dags/{DAG_ID}/dagRuns", limit=100)["dag_runs"])


def _prepared(rest: Any, runs: list[dict[str, Any]]) -> dict[str, list[str]]:
    """``{run_id: sources}`` of every run whose ``select_sources`` picked files."""
    out = {}
    for run in runs:
        tis = rest.task_instances(DAG_ID, run["dag_run_id"])
        if tis.get(("select_sources", -1), {}).get("state") == "success":
            out[run["dag_run_id"]] = rest.xcom(DAG_ID, run["dag_run_id"], "select_sources")
    return out


def _kill_group(pgid: int) -> None:
    """SIGKILL the process group the deployment started for one component."""
    if pgid <= 1 or pgid == os.getpgrp():
        raise ValueError(f"refusing to signal process group {pgid}")
    os.killpg(pgid, signal.SIGKILL)


@pytest.fixture(scope="module")
def event_runs(airflow_deployment, airflow_rest) -> dict[str, Any]:
    """Files land before a run, during it and while the triggerer is down (SIGKILLed,
    then started again); waits until every landed file was taken by a finished run.
    ``{"landed": [uri, ...], "prepared": {run_id: sources}}``; the DAG paused again."""
    deployment, rest = airflow_deployment, airflow_rest
    inbox = deployment.landing / "inbox"
    inbox.mkdir(exist_ok=True)
    rest.wait_for_dag(DAG_ID, timeout=240)
    rest.unpause(DAG_ID)
    triggerer = deployment.processes["triggerer"]
    try:
        landed = _land(inbox, ["a0.txt", "a1.txt", "a2.txt"])
        rest.wait(
            lambda: any(r["state"] in BUSY for r in _runs(rest)), 300, "a first asset-triggered run"
        )
        landed += _land(inbox, ["b0.txt", "b1.txt", "b2.txt"])  # during that run
        assert triggerer.proc is not None
        _kill_group(triggerer.proc.pid)
        triggerer.proc.wait(30)
        landed += _land(inbox, ["c0.txt", "c1.txt"])  # while no triggerer runs
        triggerer.start(deployment.env)

        def all_prepared() -> dict[str, list[str]] | None:
            runs = _runs(rest)
            if any(r["state"] in BUSY for r in runs):
                return None
            prepared = _prepared(rest, runs)
            taken = {uri for sources in prepared.values() for uri in sources}
            return prepared if taken >= set(landed) else None

        prepared = rest.wait(all_prepared, 600, f"the {len(landed)} landed files to be prepared")
    finally:
        rest.call("PATCH", f"dags/{DAG_ID}", json={"is_paused": True})
    deployment.wait(deployment.healthy, 180, "the restarted triggerer to report healthy")
    return {"landed": landed, "prepared": prepared}


@pytest.mark.timeout(900)  # includes starting the deployment when this test runs alone
def test_files_landing_across_a_triggerer_kill_are_each_prepared_once(
    airflow_rest, event_runs
) -> None:
    rest, landed, prepared = airflow_rest, event_runs["landed"], event_runs["prepared"]
    runs = {r["dag_run_id"]: r for r in _runs(rest)}
    failed = {
        rid: failure_digest(rest, DAG_ID, rid) for rid, r in runs.items() if r["state"] != "success"
    }
    assert not failed, failed
    every_take = sorted(uri for sources in prepared.values() for uri in sources)
    assert every_take == sorted(landed), "a file was prepared twice, or one was skipped"
    for run_id, sources in prepared.items():
        summary = rest.xcom(DAG_ID, run_id, "prepare")
        assert summary["sources"]["total"] == len(sources)
        assert summary["sources"]["present"] == len(sources)
        assert rest.xcom(DAG_ID, run_id, "record")["recorded"] == len(sources)
    assert len(prepared) >= 2, "the files landing during the first run make a second one"
    # The asset's state store, as the REST API shows it: the run's last task recorded
    # each file with the run that prepared it; the trigger kept its watermark beside it.
    (asset,) = rest.get("assets", name_pattern="rayorch-inbox")["assets"]
    state = {
        e["key"]: e for e in rest.get(f"assets/{asset['id']}/state-store")["asset_state_store"]
    }
    assert state[COMMITTED_KEY]["value"] == {
        uri: run_id for run_id, sources in prepared.items() for uri in sources
    }
    assert EMITTED_KEY in state


@pytest.mark.timeout(900)  # includes the runs when this test runs first or alone
def test_the_ui_shows_the_asset_events_and_their_runs(
    airflow_rest, shots: Shots, event_runs
) -> None:
    """Screenshots for docs/airflow/event-driven.md: the asset's page with the watcher's
    events, the DAG's asset-triggered runs, and one run's report."""
    prepared: dict[str, list[str]] = event_runs["prepared"]
    (asset,) = airflow_rest.get("assets", name_pattern="rayorch-inbox")["assets"]
    shots.open(f"/assets/{asset['id']}", "rayorch-inbox", "Asset Events", DAG_ID)
    shots.shot("events-asset")

    text = shots.open(f"/dags/{DAG_ID}/runs", *prepared)
    assert "asset" in text.lower(), text
    shots.shot("events-runs")

    run_id, sources = max(prepared.items(), key=lambda item: len(item[1]))
    shots.open(report_path(DAG_ID, run_id), "RayOrch run report")
    assert shots.driver.find_element("id", "source-shown").text == str(len(sources))
    cells = shots.report_rows("sources-table")
    assert len(cells) == len(sources)
    assert {c.lower() for row in cells for c in row if c.lower() in ("present", "failed")} == {
        "present"
    }, cells
    shots.shot("events-report")
