"""The run store and the repair lease on a real S3 API (moto's server on loopback).

The lease races run many rounds of threads against one S3 prefix: a lease that is a
check-then-put lets two repairs of one run both start (and so both commit one
microbatch); with S3's conditional writes exactly one wins each round.

The last test runs ``rayorch_s3`` (tests/e2e/s3_dags) through the scheduler with its
run store on the same server (the connection's ``run_store`` and
``run_store_options``): the job is killed between two microbatches, the run resumes,
a red microbatch is repaired under the lease, and the plugin serves the report.
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from e2e_helpers import ROOT
from e2e_runs import all_task_logs, assert_no_secret, failure_digest, start_runs
from s3_server import BUCKET, s3_server_fixture, start_s3_server  # noqa: F401 (a fixture)

from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.conditional import ConditionalWritesUnsupported
from airflow_provider_rayorch.runs.lease import RepairLease, RepairLeaseLost
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

if str(ROOT) not in sys.path:  # the races live in tests/unit; this file may run alone
    sys.path.insert(0, str(ROOT))
from tests.unit.runs.lease_race import (
    race_for_a_free_lease,
    race_for_an_expired_lease,
)

if TYPE_CHECKING:
    from pathlib import Path

    from rest import AirflowRest
    from s3_server import S3Server

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


@pytest.fixture
def store(s3_server: S3Server) -> RunStore:
    """A run store under a fresh prefix of the session's bucket."""
    return RunStore(f"s3://{BUCKET}/runs-{uuid.uuid4().hex[:8]}", s3_server.options())


def test_a_run_store_writes_reads_and_commits_on_s3(store: RunStore) -> None:
    plan = PlanRecord(run_id="r", pipeline="m:P", fingerprint="f", sources=[1, 2, 3])
    written = store.write_plan(plan)
    assert written.sources is None
    assert written.total_sources == 3
    assert store.read_plan("r") == written
    assert list(store.iter_sources(written)) == [1, 2, 3]
    assert store.committed("r") == frozenset()
    uri = store.write_outputs(
        "r", 0, "out", 0, [("present", None, {"a": 1}), ("failed", "x", None)]
    )
    assert uri == f"{store.uri}/r/outputs/mb-00000/out.parquet"
    store.commit_microbatch("r", 0, {"attempt": 1, "files": {"out": uri}})
    assert store.committed("r") == frozenset({0})
    assert plain(store.manifest_record("r", 0)) == {"attempt": 1, "files": {"out": uri}}
    rows = store.read_outputs("r")
    assert [(r["source"], r["outcome"], r["value"]) for r in rows] == [
        (0, "present", {"a": 1}),
        (1, "failed", None),
    ]
    store.write_run_manifest("r", {"state": "success"})
    assert plain(store.run_manifest_record("r")) == {"state": "success"}


def test_two_repairs_racing_for_a_free_lease_on_s3_never_both_win(store: RunStore) -> None:
    race_for_a_free_lease(store, "r", racers=4, rounds=40)


def test_a_late_release_races_the_takeover_of_an_expired_lease_on_s3(store: RunStore) -> None:
    race_for_an_expired_lease(store, "r", racers=3, rounds=40)


def test_a_released_lease_is_free_again_on_s3(store: RunStore) -> None:
    a, b = RepairLease(store, "r", "a"), RepairLease(store, "r", "b")
    assert a.acquire()
    assert not b.acquire()
    a.release()
    assert b.acquire()
    assert b.held().owner == "b"


def test_renewing_a_lease_taken_over_on_s3_raises(store: RunStore) -> None:
    dead = RepairLease(store, "r", "dead", ttl_s=0.0)
    assert dead.acquire()
    assert RepairLease(store, "r", "alive").acquire()
    with pytest.raises(RepairLeaseLost, match=r"now: alive"):
        dead.renew()


def test_a_server_that_ignores_conditional_puts_gets_no_lease(tmp_path: Path) -> None:
    server = start_s3_server(tmp_path / "server.log", ignore_conditions=True)
    try:
        server.create_bucket("ignores")
        store = RunStore("s3://ignores/runs", server.options())
        with pytest.raises(ConditionalWritesUnsupported, match="ignores If-None-Match") as err:
            RepairLease(store, "r", "a").acquire()
        assert server.endpoint in str(err.value)
        assert server.secret_key not in str(err.value)
        assert RepairLease(store, "r", "b").held() is None  # nothing was taken
    finally:
        server.stop()


# -- through the scheduler ----------------------------------------------------------------
DAG_ID = "rayorch_s3"
MB = "docs.microbatch"
S3_DAGS = ROOT / "tests" / "e2e" / "s3_dags"
DEADLINE_S = 300


def _calls(state: Path) -> list[int]:
    log = state / "calls.log"
    return sorted(int(x) for x in log.read_text().split()) if log.exists() else []


def _ended(rest: AirflowRest, run_id: str, state: str, after_try: int = 0) -> dict[Any, Any]:
    """Wait until the run task has a try after ``after_try`` and the run has ended in
    ``state``; its task instances."""

    def done() -> dict[tuple[str, int], Any] | None:
        tis = rest.task_instances(DAG_ID, run_id)
        run = tis[("docs.run", -1)]
        if run["try_number"] <= after_try or run["state"] not in ("success", "failed"):
            return None
        return tis if rest.run(DAG_ID, run_id)["state"] in ("success", "failed") else None

    tis = dict(rest.wait(done, DEADLINE_S, f"run {run_id} to end"))
    assert rest.run(DAG_ID, run_id)["state"] == state, failure_digest(rest, DAG_ID, run_id)
    return tis


def _clear(rest: AirflowRest, run_id: str, task: str | tuple[str, int]) -> int:
    """Clear ``task`` with its downstream; the run task's try number before the clear."""
    before = rest.task_instances(DAG_ID, run_id)[("docs.run", -1)]["try_number"]
    rest.clear(DAG_ID, run_id, [task], include_downstream=True)
    return int(before)


@pytest.mark.timeout(1200)  # includes starting the deployment when this file runs alone
def test_a_run_on_s3_is_killed_resumes_is_repaired_and_reported(
    airflow_deployment,
    airflow_rest: AirflowRest,
    ray_head: dict[str, Any],
    ray_token: str,
    s3_server: S3Server,
    e2e_root: Path,
) -> None:
    from ray.job_submission import JobSubmissionClient

    rest, prefix = airflow_rest, f"s3://{BUCKET}/dag-runs"
    rest.put_connection(
        {
            "connection_id": "rayorch_s3",
            "conn_type": "rayorch",
            "host": ray_head["address"],
            "password": ray_token,
            "extra": json.dumps(
                {
                    "run_store": prefix,
                    "run_store_options": s3_server.options(),
                    "runtime_env": {"working_dir": str(S3_DAGS)},
                }
            ),
        }
    )
    state = e2e_root / "s3-flaky"
    state.mkdir()
    (state / "fail-4").touch()
    run_id = start_runs(rest, {DAG_ID: {"conf": {"state_dir": str(state)}}})[DAG_ID]
    store = RunStore(prefix, s3_server.options())

    # microbatch 0 commits on S3; the stage holds microbatch 1: the job still runs
    rest.wait(
        lambda: rest.task_instances(DAG_ID, run_id)[("docs.submit", -1)]["state"] == "success",
        DEADLINE_S,
        "the submit task",
    )
    rid = rest.xcom(DAG_ID, run_id, "docs.submit", key="rayorch_run_id")
    first = rest.wait(
        lambda: plain(store.manifest_record(rid, 0)), DEADLINE_S, "microbatch 0's manifest"
    )
    client = JobSubmissionClient(
        ray_head["address"], headers={"Authorization": f"Bearer {ray_token}"}
    )
    [job] = [j for j in client.list_jobs() if (j.metadata or {}).get("rayorch_run_id") == rid]
    assert client.stop_job(job.submission_id)  # the driver dies between two microbatches
    tis = _ended(rest, run_id, "failed")
    assert (tis[(MB, 0)]["state"], tis[(MB, 1)]["state"]) == ("success", "failed")
    assert store.committed(rid) == frozenset({0})
    assert _calls(state) == [0, 1, 2]

    # resume: a new job for the same run skips the committed microbatch
    (state / "open").touch()
    (state / "calls.log").unlink()
    tis = _ended(rest, run_id, "failed", _clear(rest, run_id, "docs.submit"))  # 4 failed
    assert (tis[(MB, 0)]["state"], tis[(MB, 1)]["state"]) == ("success", "failed")
    assert _calls(state) == [3, 4, 5]
    assert plain(store.manifest_record(rid, 0)) == first  # untouched
    red = plain(store.manifest_record(rid, 1))
    assert [f["source"] for f in red["failures"]] == [4]

    # repair: the cleared microbatch takes the run's lease on S3 and re-runs source 4
    (state / "fail-4").unlink()
    (state / "calls.log").unlink()
    tis = _ended(rest, run_id, "success", _clear(rest, run_id, (MB, 1)))
    assert tis[(MB, 1)]["try_number"] == 3  # a repair try after the resumed one
    assert _calls(state) == [4]
    green = plain(store.manifest_record(rid, 1))
    assert (green["state"], green["attempt"]) == ("success", 2)
    assert RepairLease(store, rid, "test").held() is None  # released
    rows = store.read_outputs(rid)
    assert [(r["source"], r["value"]) for r in rows] == [(i, i * 2) for i in range(6)]

    # the plugin renders the run's report from the S3 store, with the run's connection
    page = rest.http.get(
        f"{rest.url}/rayorch/dagrun", params={"dag_id": DAG_ID, "run_id": run_id}, timeout=60
    )
    assert page.status_code == 200, page.text[:2000]
    assert "RayOrch run report" in page.text
    assert rid in page.text
    assert "Repairs and attempts" in page.text  # the repair on S3 is in the report
    assert_no_secret(
        {"S3 secret key": s3_server.secret_key},
        task_logs=all_task_logs(rest, DAG_ID, run_id),
        xcom=repr(rest.xcoms(DAG_ID, run_id)),
        report=page.text,
    )
