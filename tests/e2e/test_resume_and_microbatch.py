"""(c) a driver killed mid-run, then the task retried; (d) a poisoned source in the
per-microbatch pattern."""

from __future__ import annotations

import re

import pytest
from e2e_helpers import finish_dag, run_dag, start_dag, wait_for

from airflow_provider_rayorch.rayorch.store import RunStore

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


def _client(head, token):
    from ray.job_submission import JobSubmissionClient

    return JobSubmissionClient(head["address"], headers={"Authorization": f"Bearer {token}"})


def _jobs_of(client, dag_id):
    jobs = [j for j in client.list_jobs() if (j.metadata or {}).get("airflow_dag_id") == dag_id]
    return sorted(jobs, key=lambda j: j.start_time or 0)


def test_killed_driver_then_retry_resumes_without_recomputing(
    cluster_env, ray_head, ray_token, e2e_root
) -> None:
    from rayorch_example_pipelines import TextDocPipeline, sample_docs

    import airflow_provider_rayorch.rayorch as ro

    client = _client(ray_head, ray_token)
    root = e2e_root / "cluster-runs"
    proc = start_dag(cluster_env, "e2e_retry", E2E_DELAY_S="0.2")

    def committed_dirs():
        runs = [p for p in root.glob("e2e_retry.docs.*") if (p / "manifests").exists()]
        if runs and len(list((runs[0] / "manifests").glob("mb-*.json"))) >= 2:
            return runs[0]
        return None

    run_dir = wait_for(committed_dirs, 120, "two committed microbatches")
    running = wait_for(
        lambda: [j for j in _jobs_of(client, "e2e_retry") if str(j.status).endswith("RUNNING")],
        30,
        "the running job",
    )
    before = {p.name: p.read_bytes() for p in (run_dir / "manifests").glob("mb-*.json")}
    assert client.stop_job(running[0].submission_id)  # kills the driver mid-run
    result = finish_dag(proc, timeout=240)

    assert result["state"] == "success", result["log"][-6000:]
    assert result["tasks"]["docs[-1]"]["try_number"] == 2
    first, second = _jobs_of(client, "e2e_retry")
    assert str(first.status).endswith("STOPPED")
    assert str(second.status).endswith("SUCCEEDED")
    assert second.submission_id.endswith("-try2")
    assert second.start_time >= first.end_time  # never two concurrent jobs for one run
    # committed microbatches were not recomputed: the second driver skipped them ...
    logs = client.get_job_logs(second.submission_id)
    start = re.search(r'RAYORCH_EVENT (\{"committed": \[[^\]]*\].*"event": "start".*)', logs)
    assert start is not None, logs[-3000:]
    skipped = {f"mb-{int(i):05d}.json" for i in re.findall(r"\d+", start.group(1).split("]")[0])}
    assert set(before) <= skipped
    # ... and their manifests are untouched
    for name, data in before.items():
        assert (run_dir / "manifests" / name).read_bytes() == data
    # the final outputs equal an uninterrupted run's
    store = RunStore(str(root))
    got = [r["value"] for r in store.read_outputs(run_dir.name)]
    reference = ro.run(
        TextDocPipeline(replicas=1), sample_docs(16), input_batch_size=2, backend="local"
    )
    assert got == list(reference.outputs)
    summary = result["xcoms"]["docs[-1].return_value"]
    assert summary["sources"]["present"] == 16
    assert [m["index"] for m in summary["microbatches"]] == list(range(8))


def test_microbatch_tasks_with_a_poisoned_source(cluster_env) -> None:
    result = run_dag(cluster_env, "e2e_microbatch")
    tasks = result["tasks"]
    assert result["xcoms"]["docs.submit[-1].return_value"] == [
        {"index": 0, "first_source": 0, "count": 4},
        {"index": 1, "first_source": 4, "count": 4},
        {"index": 2, "first_source": 8, "count": 4},
    ]
    assert tasks["docs.microbatch[0]"]["state"] == "success"
    assert tasks["docs.microbatch[1]"]["state"] == "failed"
    assert tasks["docs.microbatch[2]"]["state"] == "success"
    assert tasks["docs.microbatch[1]"]["rendered_map_index"] == "mb 1: sources 4-7"
    bad = result["xcoms"]["docs.microbatch[1].return_value"]
    assert bad["state"] == "failed"
    assert bad["microbatch"] == {"index": 1, "first_source": 4, "count": 4}
    assert bad["failures"] == [
        {"source": 5, "outcome": "suppressed", "cause": "doc[5]/page[1]: unreadable page"}
    ]
    good = result["xcoms"]["docs.microbatch[2].return_value"]
    assert good["sources"]["present"] == 4
    assert good["failures"] == []
    run = result["xcoms"]["docs.run[-1].return_value"]
    assert run["sources"]["suppressed"] == 1
    assert [m["state"] for m in run["microbatches"]] == ["success", "failed", "success"]
    assert tasks["docs.run[-1]"]["state"] == "failed"  # 1/12 > max_failed_ratio
    assert result["state"] == "failed"
