"""End-to-end fixtures: a throwaway Airflow home (SQLite) and a loopback Ray head.

Every process the tests start gets ``HOME`` and ``RAY_AUTH_MODE`` set explicitly
(Ray 2.60 writes ``~/.ray/auth_token`` and turns token auth on by default). The
Ray head is stopped through its own process group, never with ``ray stop``.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
E2E_DAGS = ROOT / "tests" / "e2e" / "dags"
EXAMPLES = ROOT / "dags_examples"
PYTHON = sys.executable
AIRFLOW = str(Path(PYTHON).with_name("airflow"))
sys.path[:0] = [str(EXAMPLES), str(E2E_DAGS)]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def e2e_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="session")
def ray_token() -> str:
    return secrets.token_hex(24)


@pytest.fixture(scope="session")
def ray_head(e2e_root, ray_token):
    """A real ``ray start --head`` on 127.0.0.1 with token auth, stopped by process group."""
    from airflow_provider_rayorch.operators.local_head import start_local_head, stop_local_head

    home = e2e_root / "head-home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": ray_token,
        "PYTHONPATH": os.pathsep.join([str(EXAMPLES), str(E2E_DAGS)]),
    }
    head = start_local_head(
        num_cpus=2, env=env, timeout=120, token=ray_token, extra_args=["--include-dashboard=true"]
    )
    try:
        yield head
    finally:
        stop_local_head(head)


@pytest.fixture(scope="session")
def airflow_env(e2e_root) -> dict[str, str]:
    """Environment of every Airflow process: its own AIRFLOW_HOME with a migrated SQLite DB."""
    home = e2e_root / "airflow-home"
    user_home = e2e_root / "worker-home"
    home.mkdir()
    user_home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RAY_"))}
    env.update(
        AIRFLOW_HOME=str(home),
        HOME=str(user_home),
        RAY_AUTH_MODE="token",
        AIRFLOW__CORE__DAGS_FOLDER=str(E2E_DAGS),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__UNIT_TEST_MODE="False",
        PYTHONPATH=os.pathsep.join([str(E2E_DAGS), str(EXAMPLES), str(ROOT)]),
        AIRFLOW_CONN_RAYORCH_DEFAULT=json.dumps(
            {
                "conn_type": "rayorch",
                "extra": {
                    "run_store": str(e2e_root / "embedded-runs"),
                    "ray_init_kwargs": {"num_cpus": 2, "include_dashboard": False},
                },
            }
        ),
        AIRFLOW_CONN_RAYORCH_NOWHERE=json.dumps(
            {
                "conn_type": "rayorch",
                "host": f"http://127.0.0.1:{closed_port()}",
                "extra": {"timeout": 3},
            }
        ),
    )
    subprocess.run(
        [AIRFLOW, "db", "migrate"], env=env, check=True, capture_output=True, timeout=300
    )
    return env


@pytest.fixture(scope="session")
def cluster_env(airflow_env, ray_head, ray_token, e2e_root) -> dict[str, str]:
    """``airflow_env`` plus a ``rayorch_head`` connection to the loopback head."""
    return {
        **airflow_env,
        "AIRFLOW_CONN_RAYORCH_HEAD": json.dumps(
            {
                "conn_type": "rayorch",
                "host": ray_head["address"],
                "password": ray_token,
                "extra": {
                    "run_store": str(e2e_root / "cluster-runs"),
                    "runtime_env": {"working_dir": str(EXAMPLES)},
                },
            }
        ),
    }


def start_dag(env: dict[str, str], dag_id: str, *args: str, **extra_env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [PYTHON, str(ROOT / "tests" / "e2e" / "run_dag.py"), dag_id, *args],
        env={**env, **extra_env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def finish_dag(proc: subprocess.Popen, timeout: float = 240) -> dict[str, Any]:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
        raise AssertionError(f"dag.test did not finish within {timeout}s:\n{out[-5000:]}") from None
    for line in out.splitlines():
        if line.startswith("E2E_RESULT "):
            result = json.loads(line[len("E2E_RESULT ") :])
            result["log"] = out
            return result
    raise AssertionError(f"no result from dag.test:\n{out[-8000:]}")


def run_dag(env: dict[str, str], dag_id: str, timeout: float = 240, **extra_env: str):
    return finish_dag(start_dag(env, dag_id, **extra_env), timeout)


def wait_for(condition, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def run_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []
