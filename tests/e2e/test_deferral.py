"""Deferred sensors whose trigger fires seconds after they defer, on the real
deployment.

Airflow 3.3's scheduler reads the executor's "success" for the worker that exited on
``defer()`` only after the resumed try was queued or started, and fails that try as a
"state mismatch", with nothing in its log (apache/airflow#72716). The provider's
triggers therefore end their sensors' tasks in the triggerer. This test commits each
microbatch the moment its sensor defers: every sensor must end in its first try, with
its XCom summary and, for the one that fails the bar, the cause in its log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from commit_on_defer import DAG_ID, ENDED, SENSORS, TASK, commit_each_as_it_waits
from e2e_runs import failure_digest, start_runs

from airflow_provider_rayorch.runs.store import RunStore

if TYPE_CHECKING:
    from deployment import Deployment
    from rest import AirflowRest

pytestmark = [pytest.mark.slow]

DEADLINE_S = 420


@pytest.mark.timeout(DEADLINE_S + 120)
def test_sensors_whose_microbatch_commits_as_they_defer_end_in_their_first_try(
    airflow_deployment: Deployment, airflow_rest: AirflowRest
) -> None:
    rest = airflow_rest
    store_dir = airflow_deployment.root / "commit-on-defer-store"
    run_id = start_runs(rest, {DAG_ID: {"conf": {"run_store": str(store_dir)}}})[DAG_ID]
    tis = commit_each_as_it_waits(
        rest, run_id, RunStore(str(store_dir)), waiting={"deferred"}, deadline_s=DEADLINE_S
    )
    digest = failure_digest(rest, DAG_ID, run_id)
    mismatches = rest.get("eventLogs", dag_id=DAG_ID, run_id=run_id, event="state mismatch")
    assert mismatches["event_logs"] == [], digest
    states = {i: (ti["state"], ti["try_number"]) for (task, i), ti in tis.items() if task == TASK}
    assert states == {0: ("failed", 1), **{i: ("success", 1) for i in range(1, SENSORS)}}, digest
    for i in range(1, SENSORS):
        summary = rest.xcom(DAG_ID, run_id, TASK, map_index=i)
        assert (summary["state"], summary["sources"]["present"]) == ("success", 4)
    assert tis[(TASK, 5)]["rendered_map_index"] == "mb 5: sources 20-23"
    # the failed one: its summary in XCom under both keys, and its cause in its log
    for key in ("return_value", "rayorch_summary"):
        failed = rest.xcom(DAG_ID, run_id, TASK, key=key, map_index=0)
        assert (failed["state"], failed["sources"]["failed"]) == ("failed", 2)
    # a downstream task pulls each summary as the dict the sensor returned
    assert rest.wait(
        lambda: rest.task_instances(DAG_ID, run_id)[("summary_types", -1)]["state"] in ENDED,
        120,
        "summary_types to end",
    )
    assert rest.xcom(DAG_ID, run_id, "summary_types") == ["dict"] * SENSORS, digest
    log = rest.task_log(DAG_ID, run_id, TASK, 1, 0)
    assert "failed ratio 0.500 exceeds max_failed_ratio 0.25" in log
    assert "source 0: page 0: unreadable" in log
