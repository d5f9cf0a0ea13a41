"""Loopback-head runs on a busy machine.

On a loaded machine a new head answers ``/api/version`` long before its job agent
is up, the first ``POST /api/jobs/`` stalls or fails, and ``ray.init`` waits on a
slow raylet. Here two processes burn a CPU each (the machine has two in CI) while
three loopback-head runs start at once, each with ``retries=0``: every one must
succeed on its first try. Heavy: run it alone (``-k under_load``).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

import pytest

from tests.e2e.load import cpu_burners as burn_cpus

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def cpu_burners() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Two busy-loop processes beside the test (tests/e2e/load.py)."""
    with burn_cpus() as procs:
        yield procs


@pytest.fixture
def machine(tmp_path, monkeypatch) -> Path:
    """No connection (the head's address is the task's), the test pipelines importable
    by the head's jobs (the head gets this worker's sys.path)."""
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    for var in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RAYORCH_LOCAL_HEADS_DIR", str(tmp_path / "heads"))
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "unit" / "airflow"))
    return tmp_path


def _one_run(index: int, store: Path, started: threading.Barrier) -> dict[str, Any]:
    """A loopback-head run as the microbatch group runs it: head up, the task, head down."""
    from airflow_provider_rayorch.operators.local_head import (
        RayLocalHeadStartOperator,
        RayLocalHeadStopOperator,
    )
    from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

    started.wait(timeout=60)  # all three start together
    head = RayLocalHeadStartOperator(task_id=f"ray_head_{index}", num_cpus=1).execute({})
    try:
        ti = mock.MagicMock(
            dag_id="under_load", run_id=f"manual__{index}", task_id="docs", map_index=-1
        )
        ti.try_number, ti.max_tries = 1, 0
        op = RayOrchOperator(
            task_id="docs",
            pipeline="engine_pipelines:TwoOutputs",
            sources=[1, 2, 3],
            ray_address=head["address"],
            run_store=str(store),
            retries=0,
            poll_interval=1.0,
        )
        context = {"ti": ti, "task_state_store": None, "outlet_events": mock.MagicMock()}
        return dict(op.execute(context))
    finally:
        RayLocalHeadStopOperator(task_id=f"stop_ray_head_{index}", head=head).execute({})


@pytest.mark.timeout(900)
def test_three_loopback_head_runs_at_once_under_load(cpu_burners, machine: Path) -> None:
    assert all(proc.poll() is None for proc in cpu_burners)  # the load is there
    started = threading.Barrier(3)
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = [pool.submit(_one_run, i, machine / "runs", started) for i in range(3)]
        summaries = [future.result() for future in futures]  # retries=0: the first try
    for summary in summaries:
        assert summary["state"] == "success", summary
        assert summary["sources"]["present"] == 3
    assert all(proc.poll() is None for proc in cpu_burners)  # loaded to the end
