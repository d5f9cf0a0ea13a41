"""A killed task stops its Ray job and says so in the run store (the run-state record,
unless its driver recorded its end): the pages must not call the run running."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from unittest import mock

import pytest

from airflow_provider_rayorch.hooks.settings import RayOrchSettings
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator
from airflow_provider_rayorch.runs.run_state import read_run_state, write_run_state
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.triggers import rayorch as triggers
from airflow_provider_rayorch.triggers.rayorch import RayOrchJobTrigger

pytestmark = pytest.mark.timeout(30)


def _shown(store: RunStore, run_id: str) -> str:
    return read_run_state(store, run_id, now=datetime.now(UTC)).state


def _operator(tmp_path, stopped: bool) -> RayOrchOperator:
    hook = mock.MagicMock()
    hook.settings = RayOrchSettings(address="http://h:8265", run_store=str(tmp_path))
    hook.run_store_uri = str(tmp_path)
    hook.stop_job.return_value = stopped
    op = RayOrchOperator(task_id="t", pipeline="m:f", sources=["a"])
    op.__dict__["hook"] = hook
    op._prepared_run_id, op._job_id = "r1", "j7"
    return op


def test_a_killed_operator_records_its_stopped_job(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    write_run_state(store, "r1", "running")  # the driver's
    assert _shown(store, "r1") == "running"
    _operator(tmp_path, stopped=True).on_kill()
    state = read_run_state(store, "r1")
    assert (state.state, state.job_status, "j7" in (state.message or "")) == (
        "stopped",
        "STOPPED",
        True,
    )


def test_a_job_that_did_not_stop_keeps_its_record(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    write_run_state(store, "r1", "running")
    _operator(tmp_path, stopped=False).on_kill()
    assert _shown(store, "r1") == "running"


def test_a_killed_deferred_operator_records_its_stopped_job(monkeypatch, tmp_path) -> None:
    async def stop(self, job_id):
        return True

    monkeypatch.setattr(triggers.RayOrchHook, "astop_job", stop)
    store = RunStore(str(tmp_path))
    write_run_state(store, "r1", "running")
    asyncio.run(RayOrchJobTrigger(job_id="j7", run_id="r1", run_store=str(tmp_path)).on_kill())
    assert _shown(store, "r1") == "stopped"
