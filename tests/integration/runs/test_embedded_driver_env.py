"""An embedded driver's run store options stay in the driver: the Ray it starts
(GCS, raylet, workers, actors) does not inherit them.

The driver runs as the embedded operator starts it, a child process handed its
options in ``RAYORCH_RUN_STORE_OPTIONS``; the pipeline's actor blocks until the test
has read every process's environment and command line.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from airflow_provider_rayorch.runs.secrets import driver_env
from airflow_provider_rayorch.runs.store import RunStore
from tests.integration.rayorch.resume_plans import write_resume_plan

ROOT = str(Path(__file__).resolve().parents[3])
N_SOURCES = 4
STOP_ROW = 2


def processes_holding(needle: str, part: str) -> set[int]:
    """Processes whose ``/proc/<pid>/<part>`` (``environ``, ``cmdline``) holds ``needle``."""
    found = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/{part}", "rb") as f:
                if needle.encode() in f.read():
                    found.add(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.timeout(240)
def test_the_ray_an_embedded_driver_starts_does_not_inherit_its_store_options(
    tmp_path: Path,
) -> None:
    secret = f"s3-secret-{secrets.token_hex(8)}"
    store = RunStore(str(tmp_path / "store"))  # a local store takes no options
    log_dir, gate = write_resume_plan(
        store, tmp_path, mode="block", stop=STOP_ROW, sources=N_SOURCES, batch_size=2
    )
    ray_init = {
        "num_cpus": 2,
        "include_dashboard": False,
        "runtime_env": {"env_vars": {"PYTHONPATH": ROOT}},
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "AIRFLOW_CONN"))}
    env.update(HOME=str(tmp_path), RAY_AUTH_MODE="disabled", PYTHONPATH=ROOT)
    env.update(driver_env({"secret_key": secret}, ray_init))
    argv = [sys.executable, "-m", "airflow_provider_rayorch.job"]
    argv += ["--run-store", store.uri, "--run-id", "run"]
    with open(tmp_path / "driver.log", "wb") as log:
        driver = subprocess.Popen(
            argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        run_log = log_dir / "run.log"
        while str(STOP_ROW) not in (run_log.read_text().split() if run_log.exists() else []):
            assert driver.poll() is None, (tmp_path / "driver.log").read_text()[-3000:]
            time.sleep(0.1)
        # the actor is blocked: the driver's Ray and every worker of the run are up
        in_environ = processes_holding(secret, "environ")
        on_command_lines = processes_holding(secret, "cmdline")
        gate.touch()
        code = driver.wait(120)
    finally:
        gate.touch()
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(30)
    assert code == 0, (tmp_path / "driver.log").read_text()[-3000:]
    assert store.committed("run") == frozenset(range(N_SOURCES // 2))
    # only the driver's own starting environment (which /proc keeps) holds the secret
    assert in_environ == {driver.pid}
    assert on_command_lines == set()
