"""The run store's credentials on a real Ray job: the driver gets them, nothing else.

A loopback head (token mode) runs the provider's driver on a run store on a loopback
S3 server, with the connection's ``run_store_options`` holding the server's keys; the
pipeline's actor blocks until the test has looked. Every process's command line is
sampled from the submit to the job's end (a Ray worker shows its runtime_env on its
command line while ``setup_worker.py`` starts it); then the head's whole temp dir
(session logs, runtime resources) and the job's record in the Jobs API are searched.
A canary in the connection's ``runtime_env.env_vars`` shows each of those places
does show what a job's runtime_env holds. The driver must still have written the
store, and have deleted the key-value entry it took the options from.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import threading
import time
from pathlib import Path

import pytest

from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.operators.local_head import start_local_head, stop_local_head
from airflow_provider_rayorch.runs.handoff import deposit_name
from airflow_provider_rayorch.runs.store import RunStore
from tests.e2e.s3_server import BUCKET, start_s3_server
from tests.integration.airflow.test_local_head_auth import _wait_terminal
from tests.integration.rayorch.resume_plans import write_resume_plan

ROOT = str(Path(__file__).resolve().parents[3])
N_SOURCES = 6
STOP_ROW = 4  # the actor blocks on this row until the gate file exists


class CommandLines:
    """Samples every process's command line on a thread until stopped: for each label,
    the processes whose command line held one of its values (pid -> program, never
    the value)."""

    def __init__(self, needles: dict[str, list[str]]) -> None:
        self.needles = {label: [v.encode() for v in values] for label, values in needles.items()}
        self.holding: dict[str, dict[int, str]] = {label: {} for label in needles}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> CommandLines:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._done.set()
        self._thread.join(30)
        self.scan()

    def _run(self) -> None:
        while not self._done.is_set():
            self.scan()
            self._done.wait(0.005)

    def scan(self) -> None:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    line = f.read()
            except OSError:
                continue
            program = " ".join(a.decode(errors="replace") for a in line.split(b"\0")[:2])
            for label, values in self.needles.items():
                if any(v in line for v in values):
                    self.holding[label][int(entry.name)] = program


def files_holding(root: str, needles: list[str]) -> list[str]:
    """Regular files under ``root`` whose bytes hold one of ``needles``."""
    wanted = [n.encode() for n in needles]
    found = []
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            try:
                data = Path(path).read_bytes()
            except OSError:
                continue
            if any(n in data for n in wanted):
                found.append(os.path.relpath(path, root))
    return sorted(found)


def _wait_blocked(log_dir: Path, hook: RayOrchHook, job_id: str) -> None:
    """Until the actor logged the row it blocks on (or the job ended)."""
    run_log = log_dir / "run.log"
    while str(STOP_ROW) not in (run_log.read_text().split() if run_log.exists() else []):
        if str(hook.get_job_status(job_id)) not in ("PENDING", "RUNNING"):
            raise AssertionError(f"the job ended early:\n{hook.get_job_logs(job_id)[-3000:]}")
        time.sleep(0.1)


@pytest.mark.timeout(300)
def test_store_credentials_reach_the_driver_and_no_worker_or_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("RAY_ADDRESS", "AIRFLOW_CONN_RAYORCH_DEFAULT"):
        monkeypatch.delenv(var, raising=False)
    s3 = start_s3_server(tmp_path / "s3.log")
    try:
        s3.create_bucket(BUCKET)
        head = start_local_head(num_cpus=2, timeout=120)
        try:
            _run_and_check(tmp_path, monkeypatch, s3.options(), head)
        finally:
            stop_local_head(head)
    finally:
        s3.stop()


def _run_and_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, str], head: dict
) -> None:
    needles = [options["secret_key"], options["access_key"]]
    canary = f"canary-{secrets.token_hex(8)}"  # a user's env_vars value: Ray shows it
    uri = f"s3://{BUCKET}/runs-{secrets.token_hex(4)}"
    store = RunStore(uri, options)
    log_dir, gate = write_resume_plan(
        store, tmp_path, mode="block", stop=STOP_ROW, sources=N_SOURCES, batch_size=2
    )
    conn = {
        "conn_type": "rayorch",
        "host": head["address"],
        "extra": {
            "run_store": uri,
            "run_store_options": options,
            "runtime_env": {"env_vars": {"PYTHONPATH": ROOT, "RAYORCH_CANARY": canary}},
        },
    }
    monkeypatch.setenv("AIRFLOW_CONN_RAYORCH_DEFAULT", json.dumps(conn))
    hook = RayOrchHook()
    lines = CommandLines({"store keys": needles, "canary": [canary]}).start()
    try:
        job_id = hook.submit_job(
            f"{sys.executable} -m airflow_provider_rayorch.job --run-store {uri} --run-id run",
            submission_id=f"t-{secrets.token_hex(4)}",
        )
        _wait_blocked(log_dir, hook, job_id)
        lines.scan()  # the actor is alive and blocked: every worker of the job is up
        gate.touch()
        status = _wait_terminal(hook, job_id)
    finally:
        gate.touch()
        lines.stop()
    logs = hook.get_job_logs(job_id)
    assert status == "SUCCEEDED", logs[-3000:]
    # the driver had the store's options: it wrote the run on the S3 server
    assert store.committed("run") == frozenset(range(N_SOURCES // 2))
    assert [r["value"] for r in store.read_outputs("run")] == [i * i for i in range(N_SOURCES)]
    entry = f"/api/packages/gcs/{deposit_name(job_id)}"
    assert hook.api.request("GET", entry, allow_404=True) is None, "the driver left its entry"
    info = json.dumps(hook.get_job_info(job_id))
    # What Ray shows of a job's runtime_env.env_vars (docs/airflow/connection.md): the
    # command line of every worker of the job while it starts (the supervisor, the
    # actor), the runtime_env agent's log and the job's record.
    assert len(lines.holding["canary"]) >= 2, lines.holding["canary"]
    assert canary in info
    assert "runtime_env_agent.log" in {
        os.path.basename(f) for f in files_holding(head["temp_dir"], [canary])
    }
    # The store's keys reach none of them.
    exposed = {
        "command lines": lines.holding["store keys"],
        "keys in the Jobs API's job record": sum(n in info for n in needles),
        "files under the head's temp dir": files_holding(head["temp_dir"], needles),
    }
    assert exposed == {
        "command lines": {},
        "keys in the Jobs API's job record": 0,
        "files under the head's temp dir": [],
    }
