"""Issue 12 (6): both example DAGs on a real deployment. The scheduler runs them on the
LocalExecutor, deferred sensors wait in the real triggerer, and everything is driven
and read through the REST API. The processes run under a user ``HOME`` where Ray has
already written ``~/.ray/auth_token``, with no ``RAY_*`` variable set by hand."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest
from e2e_helpers import live_members
from e2e_runs import (
    all_task_logs,
    assert_no_secret,
    failure_digest,
    log_files,
    ray_secrets,
    run_to_the_end,
)

from airflow_provider_rayorch.rayorch.store import RunStore, read_summary_outputs

if TYPE_CHECKING:
    from pathlib import Path

    from deployment import Deployment

pytestmark = [pytest.mark.slow]


@pytest.mark.timeout(420)  # includes starting the deployment (first test to use it)
def test_minimal_example_through_the_scheduler(airflow_deployment, airflow_rest) -> None:
    dag_id = "rayorch_minimal"
    run_id, tis = run_to_the_end(airflow_rest, dag_id)
    assert tis[("prepare_docs", -1)]["state"] == "success"
    summary = airflow_rest.xcom(dag_id, run_id, "prepare_docs")
    assert summary["state"] == "success"
    assert summary["sources"] == {
        "total": 48,
        "present": 47,
        "dropped": 0,
        "failed": 0,
        "suppressed": 1,
    }
    assert summary["failures"] == [
        {"source": 7, "outcome": "suppressed", "cause": "doc[7]/page[3]: unreadable page"}
    ]
    # the outputs are in the run store the task names, one row per source, in order
    store = airflow_rest.xcom(dag_id, run_id, "prepare_docs", key="rayorch_run_store")
    rayorch_run = airflow_rest.xcom(dag_id, run_id, "prepare_docs", key="rayorch_run_id")
    assert store.startswith(str(airflow_deployment.airflow_home))
    rows = RunStore(store).read_outputs(rayorch_run)
    assert [r["source"] for r in rows] == list(range(48))
    assert [r["outcome"] for r in rows].count("present") == 47
    assert rows[0]["value"]["pages"] >= 1
    logs = all_task_logs(airflow_rest, dag_id, run_id)
    assert "48 sources, 47 present, 0 dropped, 0 failed, 1 suppressed" in logs
    xcoms = repr(airflow_rest.xcoms(dag_id, run_id))
    assert_no_secret(ray_secrets(airflow_deployment), task_logs=logs, xcom=xcoms)


def _land_files(landing: Path, start: datetime) -> None:
    """10 text files modified inside the interval (file 6 has an unreadable page) and
    one older file outside it."""
    inside = (start + timedelta(minutes=30)).timestamp()
    for i in range(10):
        path = landing / f"doc{i:02d}.txt"
        path.write_text(f"page one of {i}\fpage two" + (" POISON" if i == 6 else ""))
        os.utime(path, (inside, inside))
    stale = landing / "old.txt"
    stale.write_text("landed long ago")
    outside = (start - timedelta(hours=2)).timestamp()
    os.utime(stale, (outside, outside))


@pytest.mark.timeout(420)
def test_ingest_example_through_the_scheduler_and_triggerer(
    airflow_deployment, airflow_rest
) -> None:
    """The per-microbatch pattern: loopback head (setup/teardown), submit, mapped
    deferrable microbatch sensors, the run sensor, a reader task. (Whether a sensor
    defers depends on how fast the job commits; the gated test below makes them.)"""
    dag_id = "rayorch_ingest"
    # the run of the last complete hour, as the scheduler makes it (same logical date)
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(hours=1)
    _land_files(airflow_deployment.landing, start)
    run_id, tis = run_to_the_end(
        airflow_rest,
        dag_id,
        logical_date=start.isoformat(),
        data_interval=(start.isoformat(), end.isoformat()),
    )
    xcom = lambda task, **kw: airflow_rest.xcom(dag_id, run_id, task, **kw)  # noqa: E731
    assert xcom("ingest.submit") == [
        {"index": 0, "first_source": 0, "count": 4},
        {"index": 1, "first_source": 4, "count": 4},
        {"index": 2, "first_source": 8, "count": 2},
    ]
    labels = ["mb 0: sources 0-3", "mb 1: sources 4-7", "mb 2: sources 8-9"]
    for i, label in enumerate(labels):
        ti = tis[("ingest.microbatch", i)]
        assert (ti["state"], ti["rendered_map_index"]) == ("success", label), failure_digest(
            airflow_rest, dag_id, run_id
        )
        summary = xcom("ingest.microbatch", map_index=i)
        assert summary["state"] == "success"
        assert summary["microbatch"]["index"] == i
        bad = 1 if i == 1 else 0
        assert summary["sources"]["present"] == summary["microbatch"]["count"] - bad
        assert [f["source"] for f in summary["failures"]] == ([6] if bad else [])
        # each microbatch summary reads its own committed rows back from the run store
        rows = read_summary_outputs(summary)
        assert [r["source"] for r in rows] == list(range(4 * i, 4 * i + len(rows)))
    run = xcom("ingest.run")
    assert run["state"] == "success"
    assert run["sources"] == {"total": 10, "present": 9, "dropped": 0, "failed": 0, "suppressed": 1}
    assert [m["state"] for m in run["microbatches"]] == ["success"] * 3
    assert xcom("report") == {"documents": 9, "words": 9 * 6}
    rows = read_summary_outputs(run)
    assert [r["source"] for r in rows] == list(range(10))
    assert rows[6]["outcome"] == "suppressed"
    assert str(rows[0]["value"]["markdown"]).startswith("page one of 0")
    # teardown: the loopback head's process group is gone
    head = xcom("ingest.ray_head")
    assert tis[("ingest.stop_ray_head", -1)]["state"] == "success"
    assert live_members(int(head["pgid"])) == []
    # clearing one mapped microbatch (dry run) targets it and what runs after it only
    cleared = airflow_rest.clear(dag_id, run_id, [("ingest.microbatch", 1)], dry_run=True)
    targets = {(t["task_id"], t["map_index"]) for t in cleared}
    assert {("ingest.microbatch", 1), ("ingest.run", -1), ("report", -1)} <= targets
    assert not {("ingest.microbatch", 0), ("ingest.microbatch", 2)} & targets
    logs = all_task_logs(airflow_rest, dag_id, run_id)
    xcoms = repr(airflow_rest.xcoms(dag_id, run_id))
    assert_no_secret(
        ray_secrets(airflow_deployment, head),
        task_logs=logs,
        xcom=xcoms,
        log_files=log_files(airflow_deployment),
    )


def trigger_logs(deployment: Deployment, dag_id: str, run_id: str, task_id: str) -> dict[str, str]:
    """``{map_index=N: text}`` of the trigger logs the triggerer wrote for a task."""
    found: dict[str, str] = {}
    folder = deployment.airflow_home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}"
    for path in (folder / f"task_id={task_id}").glob("map_index=*/*.trigger.*.log"):
        found[path.parent.name] = found.get(path.parent.name, "") + path.read_text()
    return found


@pytest.mark.timeout(300)
def test_microbatch_sensors_defer_to_the_real_triggerer(airflow_deployment, airflow_rest) -> None:
    """A job that commits nothing until the gate opens: each mapped sensor defers, and
    its trigger fires in the triggerer process when its microbatch commits."""
    dag_id, rest = "rayorch_gated", airflow_rest
    gate = airflow_deployment.landing / "gate-open"
    rest.wait_for_dag(dag_id)
    run_id = rest.trigger(dag_id, conf={"gate": str(gate)})["dag_run_id"]
    rest.unpause(dag_id)

    def all_deferred() -> bool:
        tis = rest.task_instances(dag_id, run_id)
        states = [ti["state"] for (task, _), ti in tis.items() if task == "docs.microbatch"]
        if {"failed", "upstream_failed"} & {ti["state"] for ti in tis.values()}:
            raise AssertionError(failure_digest(rest, dag_id, run_id))
        return len(states) == 3 and set(states) == {"deferred"}

    rest.wait(all_deferred, 180, "the three microbatch sensors to defer")
    gate.write_text("open")
    run = rest.wait_for_run(dag_id, run_id, 180)
    assert run["state"] == "success", failure_digest(rest, dag_id, run_id)
    tis = rest.task_instances(dag_id, run_id)
    for i in range(3):
        assert tis[("docs.microbatch", i)]["state"] == "success"
        summary = rest.xcom(dag_id, run_id, "docs.microbatch", map_index=i)
        assert (summary["state"], summary["sources"]["present"]) == ("success", 4)
    fired = trigger_logs(airflow_deployment, dag_id, run_id, "docs.microbatch")
    assert sorted(fired) == [f"map_index={i}" for i in range(3)], airflow_deployment.logs()
    assert all("Trigger fired event" in text for text in fired.values()), fired
