"""Helpers of the end-to-end tests: paths, a free port, condition waits, live
members of a process group."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[2]
E2E_DAGS = ROOT / "tests" / "e2e" / "dags"
EXAMPLES = ROOT / "dags_examples"
sys.path[:0] = [str(EXAMPLES), str(E2E_DAGS)]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(condition, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


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


@contextlib.contextmanager
def heads_of(deployment: Any) -> Iterator[None]:
    """Record and look up loopback heads where the deployment's components do
    (``RAYORCH_LOCAL_HEADS_DIR``, set by scripts/deployment.py for each component)."""
    saved = os.environ.get("RAYORCH_LOCAL_HEADS_DIR")
    os.environ["RAYORCH_LOCAL_HEADS_DIR"] = str(
        deployment.airflow_home / "deployment" / "ray-heads"
    )
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("RAYORCH_LOCAL_HEADS_DIR", None)
        else:
            os.environ["RAYORCH_LOCAL_HEADS_DIR"] = saved
