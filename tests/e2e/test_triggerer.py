"""(d2) The per-microbatch pattern with a real triggerer process (not dag.test()'s
inline triggers): tasks run on the LocalExecutor through an api-server, deferred
sensors wait in ``airflow triggerer``."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess

import pytest
import requests
from e2e_helpers import AIRFLOW, closed_port, finish_dag, start_dag, wait_for

pytestmark = [pytest.mark.timeout(420), pytest.mark.slow]


def _spawn(cmd: list[str], env: dict[str, str], log_path) -> subprocess.Popen:
    log = open(log_path, "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def test_microbatch_sensors_deferred_to_a_real_triggerer(
    cluster_env, e2e_root, ray_head, ray_token
) -> None:
    port = closed_port()
    env = {
        **cluster_env,
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(16),
        "AIRFLOW__API__PORT": str(port),
        "E2E_DELAY_S": "0.25",
    }
    logs = e2e_root / "d2"
    logs.mkdir()
    api = _spawn(
        [AIRFLOW, "api-server", "--apps", "execution", "-H", "127.0.0.1", "-p", str(port)],
        env,
        logs / "api-server.log",
    )
    triggerer = _spawn([AIRFLOW, "triggerer", "--skip-serve-logs"], env, logs / "triggerer.log")
    try:

        def api_up() -> bool:
            try:
                return requests.get(f"http://127.0.0.1:{port}/execution/health", timeout=2).ok
            except requests.RequestException:
                return False

        wait_for(api_up, 120, "the execution api-server", interval=0.5)
        result = finish_dag(start_dag(env, "e2e_microbatch", "--use-executor"), timeout=300)
    finally:
        _stop(triggerer)
        _stop(api)
    tasks = result["tasks"]
    assert tasks["docs.microbatch[0]"]["state"] == "success", result["log"][-5000:]
    assert tasks["docs.microbatch[1]"]["state"] == "failed"
    assert tasks["docs.microbatch[2]"]["state"] == "success"
    assert result["xcoms"]["docs.microbatch[1].return_value"]["failures"][0]["source"] == 5
    assert "running trigger in line" not in result["log"]
    # the sensors deferred, and their triggers fired in the triggerer process
    task_logs = e2e_root / "airflow-home" / "logs" / "dag_id=e2e_microbatch"
    pattern = "run_id=*/task_id=docs.microbatch/map_index=*/*.trigger.*.log"
    fired = [p for p in task_logs.glob(pattern) if "Trigger fired event" in p.read_text()]
    assert fired, (logs / "triggerer.log").read_text()[-4000:]
    # microbatch 0's task succeeded as soon as it committed, before the run ended
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(
        ray_head["address"], headers={"Authorization": f"Bearer {ray_token}"}
    )
    [job] = [
        j
        for j in client.list_jobs()
        if (j.metadata or {}).get("airflow_run_id") == result["run_id"]
    ]
    assert tasks["docs.microbatch[0]"]["end_date"] * 1000 < job.end_time
