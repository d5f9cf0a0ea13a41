"""The operator against a real ``ray start --head`` through the Jobs API, on the shared
deployment (scheduler, LocalExecutor, triggerer): sync and deferrable runs, a pipeline
that does not compile, an unreachable cluster, a poisoned source in the per-microbatch
pattern, and a driver killed mid-run whose task retry resumes without recomputing.

The DAGs are tests/e2e/dags/e2e_dags.py; ``rayorch_head`` and ``rayorch_nowhere`` are
connections made through the REST API (the head's token as the password). Every run
of the module is triggered at once (``cluster_runs``); each test waits for its own.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from e2e_helpers import EXAMPLES, closed_port, wait_for
from e2e_runs import all_task_logs, assert_no_secret, failure_digest, finish_run, start_runs

from airflow_provider_rayorch.runs.store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

    from deployment import Deployment
    from rest import AirflowRest

pytestmark = [pytest.mark.slow]

DAGS = (
    "e2e_retry",
    "e2e_cluster_sync",
    "e2e_cluster_deferrable",
    "e2e_compile_error",
    "e2e_unreachable",
    "e2e_microbatch",
)
#: A run waits beside the module's five others on two shared cores.
DEADLINE_S = 480


@pytest.fixture(scope="module")
def cluster_store(e2e_root: Path) -> Path:
    return e2e_root / "cluster-runs"


@pytest.fixture(scope="module")
def cluster_runs(
    airflow_deployment: Deployment, airflow_rest: AirflowRest, ray_head, ray_token, cluster_store
) -> dict[str, str]:
    """``{dag_id: run_id}`` of one run of each DAG of this module, triggered together."""
    airflow_rest.put_connection(
        {
            "connection_id": "rayorch_head",
            "conn_type": "rayorch",
            "host": ray_head["address"],
            "password": ray_token,
            "extra": json.dumps(
                {"run_store": str(cluster_store), "runtime_env": {"working_dir": str(EXAMPLES)}}
            ),
        },
    )
    airflow_rest.put_connection(
        {
            "connection_id": "rayorch_nowhere",
            "conn_type": "rayorch",
            "host": f"http://127.0.0.1:{closed_port()}",
            "extra": json.dumps({"timeout": 3}),
        },
    )
    return start_runs(airflow_rest, {dag_id: {} for dag_id in DAGS})


def _client(head: dict[str, Any], token: str):
    from ray.job_submission import JobSubmissionClient

    return JobSubmissionClient(head["address"], headers={"Authorization": f"Bearer {token}"})


def _jobs_of(client, dag_id: str) -> list[Any]:
    jobs = [j for j in client.list_jobs() if (j.metadata or {}).get("airflow_dag_id") == dag_id]
    return sorted(jobs, key=lambda j: j.start_time or 0)


def _ended(rest: AirflowRest, dag_id: str, run_id: str) -> dict[tuple[str, int], dict[str, Any]]:
    """Wait for a run expected to fail; its task instances."""
    run = rest.wait_for_run(dag_id, run_id, DEADLINE_S)
    assert run["state"] == "failed", failure_digest(rest, dag_id, run_id)
    return rest.task_instances(dag_id, run_id)


def _trigger_logs(deployment: Deployment, dag_id: str, run_id: str, task_id: str) -> str:
    folder = deployment.airflow_home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}"
    return "\n".join(p.read_text() for p in (folder / f"task_id={task_id}").rglob("*.trigger.*"))


# First in the module: it must catch the job while it runs.
@pytest.mark.timeout(900)  # includes starting the deployment when this module runs alone
def test_killed_driver_then_retry_resumes_without_recomputing(
    airflow_rest, cluster_runs, ray_head, ray_token, cluster_store
) -> None:
    from rayorch_example_pipelines import TextDocPipeline, sample_docs

    import airflow_provider_rayorch.rayorch as ro

    dag_id, rest = "e2e_retry", airflow_rest
    run_id, client = cluster_runs[dag_id], _client(ray_head, ray_token)

    def committed_dirs() -> Path | None:
        runs = [p for p in cluster_store.glob("e2e_retry.docs.*") if (p / "manifests").exists()]
        if runs and len(list((runs[0] / "manifests").glob("mb-*.json"))) >= 2:
            return runs[0]
        return None

    run_dir = wait_for(committed_dirs, DEADLINE_S, "two committed microbatches")
    running = wait_for(
        lambda: [j for j in _jobs_of(client, dag_id) if str(j.status).endswith("RUNNING")],
        30,
        "the running job",
    )
    before = {p.name: p.read_bytes() for p in (run_dir / "manifests").glob("mb-*.json")}
    assert client.stop_job(running[0].submission_id)  # kills the driver mid-run
    tis = finish_run(rest, dag_id, run_id, DEADLINE_S)

    assert tis[("docs", -1)]["try_number"] == 2
    first, second = _jobs_of(client, dag_id)
    assert str(first.status).endswith("STOPPED")
    assert str(second.status).endswith("SUCCEEDED")
    assert second.submission_id.endswith("-try2")
    assert second.start_time >= first.end_time  # never two concurrent jobs for one run
    # committed microbatches were not recomputed: the second driver found them committed
    # and committed only the others ...
    logs = client.get_job_logs(second.submission_id)
    events = [
        json.loads(line.removeprefix("RAYORCH_EVENT "))
        for line in logs.splitlines()
        if line.startswith("RAYORCH_EVENT ")
    ]
    start = [e for e in events if e["event"] == "start" and "run_id" in e]
    assert len(start) == 1, logs[-3000:]
    assert start[0]["committed"] >= len(before)
    again = {f"mb-{int(e['index']):05d}.json" for e in events if e["event"] == "microbatch"}
    assert not again & set(before), logs[-3000:]
    # ... and their manifests are untouched
    for name, data in before.items():
        assert (run_dir / "manifests" / name).read_bytes() == data
    # the final outputs equal an uninterrupted run's
    got = [r["value"] for r in RunStore(str(cluster_store)).read_outputs(run_dir.name)]
    reference = ro.run(
        TextDocPipeline(replicas=1), sample_docs(16), input_batch_size=2, backend="local"
    )
    assert got == list(reference.outputs)
    summary = rest.xcom(dag_id, run_id, "docs")
    assert summary["sources"]["present"] == 16
    assert [m["index"] for m in summary["microbatches"]] == list(range(8))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("mode", ["sync", "deferrable"])
def test_cluster_run_through_jobs_api(
    airflow_deployment, airflow_rest, cluster_runs, ray_head, ray_token, mode
) -> None:
    dag_id, rest = f"e2e_cluster_{mode}", airflow_rest
    run_id = cluster_runs[dag_id]
    finish_run(rest, dag_id, run_id, DEADLINE_S)
    summary = rest.xcom(dag_id, run_id, "docs")
    assert summary["sources"]["present"] == 10
    assert summary["state"] == "success"
    [job] = _jobs_of(_client(ray_head, ray_token), dag_id)
    assert str(job.status) in ("SUCCEEDED", "JobStatus.SUCCEEDED")
    assert job.metadata["rayorch_run_id"] == summary["run_id"]
    assert rest.xcom(dag_id, run_id, "docs", key="rayorch_job_url").endswith(job.submission_id)
    # a head started by start_local_head is a provider loopback head: its dashboard ends
    # with it, so the "Ray job" link opens the run's stored report
    link = rest.xcom(dag_id, run_id, "docs", key="_link_RayJobLink")
    assert link.startswith(f"/rayorch/ti?dag_id={dag_id}&")
    assert_no_secret(  # the token is masked / never printed
        {"connection password": ray_token},
        task_logs=all_task_logs(rest, dag_id, run_id),
        xcom=repr(rest.xcoms(dag_id, run_id)),
    )
    fired = _trigger_logs(airflow_deployment, dag_id, run_id, "docs")
    if mode == "deferrable":  # the operator deferred; its trigger ran in the triggerer
        assert "Trigger fired event" in fired, airflow_deployment.logs()
    else:
        assert fired == ""
    store = RunStore(rest.xcom(dag_id, run_id, "docs", key="rayorch_run_store"))
    assert len(store.read_outputs(summary["run_id"])) == 10


@pytest.mark.timeout(600)
def test_compile_error_fails_at_once_and_submits_nothing(
    airflow_rest, cluster_runs, ray_head, ray_token, cluster_store
) -> None:
    dag_id, rest = "e2e_compile_error", airflow_rest
    run_id = cluster_runs[dag_id]
    tis = _ended(rest, dag_id, run_id)
    task = tis[("docs", -1)]
    assert task["state"] == "failed"
    assert task["try_number"] == 1  # no retry for a CompileError
    log = rest.task_log(dag_id, run_id, "docs", 1)
    assert "RayOrchCompileFailed" in log
    assert "does not compile" in log
    assert _jobs_of(_client(ray_head, ray_token), dag_id) == []
    runs = list(cluster_store.iterdir()) if cluster_store.exists() else []
    assert not any(dag_id in p.name for p in runs)


@pytest.mark.timeout(600)
def test_unreachable_cluster_fails_clearly_in_bounded_time(airflow_rest, cluster_runs) -> None:
    dag_id, rest = "e2e_unreachable", airflow_rest
    run_id = cluster_runs[dag_id]
    tis = _ended(rest, dag_id, run_id)
    task = tis[("docs", -1)]
    assert task["state"] == "failed"
    log = "\n".join(
        rest.task_log(dag_id, run_id, "docs", n) for n in range(1, task["try_number"] + 1)
    )
    assert "cannot reach the Ray Jobs API" in log


@pytest.mark.timeout(600)
def test_microbatch_tasks_with_a_poisoned_source(airflow_rest, cluster_runs) -> None:
    dag_id, rest = "e2e_microbatch", airflow_rest
    run_id = cluster_runs[dag_id]
    tis = _ended(rest, dag_id, run_id)  # 1/12 > max_failed_ratio
    xcom = lambda task, **kw: rest.xcom(dag_id, run_id, task, **kw)  # noqa: E731
    assert xcom("docs.submit") == [
        {"index": 0, "first_source": 0, "count": 4},
        {"index": 1, "first_source": 4, "count": 4},
        {"index": 2, "first_source": 8, "count": 4},
    ]
    states = [tis[("docs.microbatch", i)]["state"] for i in range(3)]
    assert states == ["success", "failed", "success"], failure_digest(rest, dag_id, run_id)
    assert tis[("docs.microbatch", 1)]["rendered_map_index"] == "mb 1: sources 4-7"
    bad = xcom("docs.microbatch", map_index=1)
    assert bad["state"] == "failed"
    assert bad["microbatch"] == {"index": 1, "first_source": 4, "count": 4}
    assert bad["failures"] == [
        {"source": 5, "outcome": "suppressed", "cause": "doc[5]/page[1]: unreadable page"}
    ]
    good = xcom("docs.microbatch", map_index=2)
    assert good["sources"]["present"] == 4
    assert good["failures"] == []
    run = xcom("docs.run")
    assert run["sources"]["suppressed"] == 1
    assert [m["state"] for m in run["microbatches"]] == ["success", "failed", "success"]
    assert tis[("docs.run", -1)]["state"] == "failed"
