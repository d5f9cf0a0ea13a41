"""A loopback head's teardown stops every head its setup started in the run.

Clearing a task of a ``local_head=True`` group clears its ``ray_head`` setup too: the
setup runs again (a new head) while an earlier head may still be up, and a second
clear kills a ``ray_head`` try that is still starting its head (Airflow sends the
task SIGTERM, which calls ``on_kill``, then SIGKILL after 5 s). These tests start
real heads (``ray start --head`` on 127.0.0.1), run the setup and teardown operators
as Airflow runs them, and check with psutil that no process of any of those heads is
left. They stop what they started by process group, never with ``ray stop``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import psutil
import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.timeout(600)

#: A setup try in a process of its own, as Airflow's task runner runs it: SIGTERM
#: calls ``on_kill`` and returns.
SETUP_TRY = """
import signal, sys
from types import SimpleNamespace
from airflow_provider_rayorch.operators.local_head import RayLocalHeadStartOperator

op = RayLocalHeadStartOperator(task_id="g.ray_head", num_cpus=1)
signal.signal(signal.SIGTERM, lambda *_: op.on_kill())
ti = SimpleNamespace(dag_id="d", run_id="manual__1", task_id="g.ray_head", map_index=-1)
op.execute({"ti": ti})
"""


def _members(pgid: int) -> list[psutil.Process]:
    """Live (not zombie) processes of process group ``pgid``."""
    found = []
    for proc in psutil.process_iter(["status"]):
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc)
    return found


@pytest.fixture
def heads(tmp_path, monkeypatch) -> Iterator[list[int]]:
    """A private head registry; the process groups of heads a test saw, killed at the
    end whatever happened (the test's own heads only)."""
    for var in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RAYORCH_LOCAL_HEADS_DIR", str(tmp_path / "heads"))
    seen: list[int] = []
    yield seen
    for pgid in seen:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def _ti(task_id: str) -> SimpleNamespace:
    return SimpleNamespace(dag_id="d", run_id="manual__1", task_id=task_id, map_index=-1)


def _group_operators() -> tuple[Any, Any]:
    """``ray_head`` and ``stop_ray_head`` wired as rayorch_microbatch_group wires them."""
    from airflow.sdk import DAG
    from airflow.sdk.definitions.taskgroup import TaskGroup

    from airflow_provider_rayorch.operators.local_head import (
        RayLocalHeadStartOperator,
        RayLocalHeadStopOperator,
    )

    with DAG("d", schedule=None), TaskGroup("g"):
        setup = RayLocalHeadStartOperator(task_id="ray_head", num_cpus=1)
        stop = RayLocalHeadStopOperator(task_id="stop_ray_head", head=setup.output)
        stop.as_teardown(setups=setup)
    return setup, stop


def _start_try_in_a_process() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", SETUP_TRY],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _head_while_starting(setup_try: subprocess.Popen[bytes], seen: list[int]) -> int:
    """The process group of the head ``setup_try`` is starting, once its GCS runs."""
    while True:
        assert setup_try.poll() is None, "the setup try ended before its head started"
        for child in psutil.Process(setup_try.pid).children():
            with contextlib.suppress(psutil.Error):
                if "start" in child.cmdline() and child.pid not in seen:
                    seen.append(child.pid)
                members = _members(child.pid)
                if any("gcs_server" in " ".join(p.cmdline()) for p in members):
                    return child.pid
        time.sleep(0.2)


def test_a_setup_try_killed_while_its_head_starts_stops_that_head(heads: list[int]) -> None:
    setup_try = _start_try_in_a_process()
    try:
        pgid = _head_while_starting(setup_try, heads)
        # Airflow's supervisor: SIGTERM (the task calls on_kill), SIGKILL 5 s later
        setup_try.send_signal(signal.SIGTERM)
        try:
            setup_try.wait(5)
        except subprocess.TimeoutExpired:
            setup_try.kill()
            setup_try.wait()
    finally:
        if setup_try.poll() is None:
            setup_try.kill()
    left = [" ".join(p.cmdline()[:2]) for p in _members(pgid) if p.is_running()]
    assert not left, f"the killed setup try left its head running: {left}"


def test_teardown_stops_the_heads_of_every_setup_try_of_the_run(heads: list[int]) -> None:
    setup, stop = _group_operators()
    first = setup.execute({"ti": _ti("g.ray_head")})  # try 1: head up
    heads.append(int(first["pgid"]))
    second = setup.execute({"ti": _ti("g.ray_head")})  # try 2, after a clear
    heads.append(int(second["pgid"]))
    assert _members(int(first["pgid"])), "a new setup try must not stop a head jobs may use"
    stop.head = second  # the teardown's XCom is the last try's
    stop.execute({"ti": _ti("g.stop_ray_head")})
    for head in (first, second):
        left = [p.pid for p in _members(int(head["pgid"]))]
        assert not left, f"the teardown left the head at {head['address']}: {left}"


def test_a_head_whose_setup_try_died_without_on_kill_is_stopped_by_the_next_try(
    heads: list[int],
) -> None:
    setup, stop = _group_operators()
    setup_try = _start_try_in_a_process()
    try:
        orphan = _head_while_starting(setup_try, heads)
    finally:
        setup_try.kill()  # SIGKILL: no on_kill
        setup_try.wait()
    assert _members(orphan)
    second = setup.execute({"ti": _ti("g.ray_head")})  # the next try
    heads.append(int(second["pgid"]))
    left = [p.pid for p in _members(orphan)]
    assert not left, f"the next setup try left the head its killed try was starting: {left}"
    stop.head = second
    stop.execute({"ti": _ti("g.stop_ray_head")})
    assert not _members(int(second["pgid"]))
