"""Helpers of the end-to-end tests: paths, running dag.test() in a fresh process.

Every process the tests start gets ``HOME`` and ``RAY_AUTH_MODE`` set explicitly
(Ray 2.60 writes ``~/.ray/auth_token`` and turns token auth on by default). The
Ray head is stopped through its own process group, never with ``ray stop``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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


def live_members(pgid: int, wait_s: float = 30.0) -> list[int]:
    """Processes of group ``pgid`` that are still alive (zombies, which a container's
    init may never reap, do not count), after waiting up to ``wait_s`` for them to exit."""
    deadline = time.monotonic() + wait_s
    while True:
        alive = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            state, group = fields[0], int(fields[2])
            if group == pgid and state != "Z":
                alive.append(int(entry))
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)
