"""The 24-sensor commit-as-they-wait DAG under the OpenLineage listener.

Beside a listener Airflow refuses ``end_from_trigger``, so a deferred sensor resumes on a
worker, where Airflow 3.3's scheduler can fail the resumed try as a "state mismatch"
(apache/airflow#72716): measured on this deployment before the fix, 3 of 48 tries
failed so in two runs. The sensors therefore wait on a worker beside listeners
(airflow_provider_rayorch/sensors/_wait_mode.py). This module runs the DAG of
test_deferral.py on a deployment with the listener on, committing each microbatch the
moment its sensor starts waiting, several times: every sensor ends in its first try, no
state mismatch is logged, and the listener saw every sensor end (its events are in the
file transport's output).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from commit_on_defer import DAG_ID, SENSORS, TASK, commit_each_as_it_waits
from deployment import listener_events
from e2e_runs import failure_digest, start_runs
from rest import AirflowRest

from airflow_provider_rayorch.runs.store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

    from deployment import Deployment

pytest.importorskip("airflow.providers.openlineage")
pytestmark = [pytest.mark.slow]

#: runs of the DAG per CI run (each one 24 sensors racing their commits)
RUNS = 2
DEADLINE_S = 300
WAITING = {"running", "deferred"}


@pytest.fixture(scope="module")
def airflow_deployment(listener_deployment: Deployment) -> Deployment:
    """The session's deployment with the OpenLineage listener on (conftest.py)."""
    return listener_deployment


@pytest.fixture(scope="module")
def events_file(airflow_deployment: Deployment) -> Path:
    return listener_events(airflow_deployment)


def _sensor_ends_seen_by_listener(events_file: Path, run_id: str) -> set[int]:
    """The map indexes of the sensors whose COMPLETE or FAIL event the listener wrote."""
    seen: set[int] = set()
    for line in events_file.read_text().splitlines():
        event = json.loads(line)
        if event.get("eventType") not in ("COMPLETE", "FAIL"):
            continue
        facets = event.get("run", {}).get("facets", {})
        airflow = facets.get("airflow", {})
        ti = airflow.get("taskInstance", {})
        dag_run = airflow.get("dagRun", {})
        if airflow.get("task", {}).get("task_id") == TASK and dag_run.get("run_id") == run_id:
            seen.add(int(ti.get("map_index", -1)))
    return seen


@pytest.mark.timeout(RUNS * (DEADLINE_S + 60) + 120)
def test_sensors_under_the_listener_end_in_their_first_try(
    airflow_deployment: Deployment, events_file: Path
) -> None:
    rest = AirflowRest(airflow_deployment.url, on_timeout=airflow_deployment.logs)
    for r in range(RUNS):
        store_dir = airflow_deployment.root / f"listener-store-{r}"
        conf = {"conf": {"run_store": str(store_dir)}}
        run_id = (
            start_runs(rest, {DAG_ID: conf})
            if r == 0
            else {DAG_ID: rest.trigger(DAG_ID, **conf)["dag_run_id"]}
        )[DAG_ID]
        tis = commit_each_as_it_waits(
            rest, run_id, RunStore(str(store_dir)), waiting=WAITING, deadline_s=DEADLINE_S
        )
        digest = failure_digest(rest, DAG_ID, run_id)
        mismatches = rest.get("eventLogs", dag_id=DAG_ID, run_id=run_id, event="state mismatch")
        assert mismatches["event_logs"] == [], f"run {r}: {digest}"
        states = {i: (ti["state"], ti["try_number"]) for (t, i), ti in tis.items() if t == TASK}
        expected = {0: ("failed", 1), **{i: ("success", 1) for i in range(1, SENSORS)}}
        assert states == expected, f"run {r}: {digest}"
        summary = rest.xcom(DAG_ID, run_id, TASK, map_index=1)
        assert (summary["state"], summary["sources"]["present"]) == ("success", 4)
        log = rest.task_log(DAG_ID, run_id, TASK, 1, 0)
        assert "failed ratio 0.500 exceeds max_failed_ratio 0.25" in log
        # the listener was on: it saw every sensor end (the events of a task come from
        # its worker, written before the task instance's end is visible)
        assert rest.wait(
            lambda run_id=run_id: (
                _sensor_ends_seen_by_listener(events_file, run_id) == set(range(SENSORS))
            ),
            60,
            "the listener's end events of every sensor",
        )
