"""(b, e, f) The operator against a real loopback ``ray start --head`` via the Jobs API."""

from __future__ import annotations

import time

import pytest
from e2e_helpers import run_dag, run_dirs

from airflow_provider_rayorch.rayorch.store import RunStore

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


def _jobs(head, token):
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(head["address"], headers={"Authorization": f"Bearer {token}"})
    return client.list_jobs()


def _jobs_of(head, token, dag_id):
    return [j for j in _jobs(head, token) if (j.metadata or {}).get("airflow_dag_id") == dag_id]


@pytest.mark.parametrize("mode", ["sync", "deferrable"])
def test_cluster_run_through_jobs_api(cluster_env, ray_head, ray_token, e2e_root, mode) -> None:
    dag_id = f"e2e_cluster_{mode}"
    result = run_dag(cluster_env, dag_id)
    assert result["state"] == "success", result["log"][-6000:]
    summary = result["xcoms"]["docs[-1].return_value"]
    assert summary["sources"]["present"] == 10
    assert summary["state"] == "success"
    [job] = _jobs_of(ray_head, ray_token, dag_id)
    assert str(job.status) in ("SUCCEEDED", "JobStatus.SUCCEEDED")
    assert job.metadata["rayorch_run_id"] == summary["run_id"]
    assert result["xcoms"]["docs[-1].rayorch_job_url"].endswith(job.submission_id)
    # a head started by start_local_head is a provider loopback head: its dashboard ends
    # with it, so the "Ray job" link opens the run's stored report (issue 12 finding 9)
    assert result["xcoms"]["docs[-1]._link_RayJobLink"].startswith(f"/rayorch/ti?dag_id={dag_id}&")
    assert ray_token not in result["log"]  # the token is masked / never printed
    if mode == "deferrable":
        assert "[DAG TEST] running trigger in line" in result["log"]
    store = RunStore(str(e2e_root / "cluster-runs"))
    assert len(store.read_outputs(summary["run_id"])) == 10


def test_compile_error_fails_at_once_and_submits_nothing(
    cluster_env, ray_head, ray_token, e2e_root
) -> None:
    result = run_dag(cluster_env, "e2e_compile_error")
    assert result["state"] == "failed"
    task = result["tasks"]["docs[-1]"]
    assert task["state"] == "failed"
    assert task["try_number"] == 1  # no retry for a CompileError
    assert "RayOrchCompileFailed" in result["log"]
    assert "does not compile" in result["log"]
    assert _jobs_of(ray_head, ray_token, "e2e_compile_error") == []
    assert not any("e2e_compile_error" in p.name for p in run_dirs(e2e_root / "cluster-runs"))


def test_unreachable_cluster_fails_clearly_in_bounded_time(airflow_env) -> None:
    start = time.monotonic()
    result = run_dag(airflow_env, "e2e_unreachable", timeout=120)
    assert result["state"] == "failed"
    assert "cannot reach the Ray Jobs API" in result["log"]
    assert time.monotonic() - start < 90
