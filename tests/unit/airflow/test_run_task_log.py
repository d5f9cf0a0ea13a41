"""The run task's log says what its run did, and why its job ended without the run
manifest, in the driver's words (task and trigger logs are structlog loggers:
``Lines`` records what they log)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING
from unittest import mock

import pytest
from test_microbatch_task_log import FAILURES, RAY_FAILED, Lines, _manifest

from airflow_provider_rayorch.exceptions import RayOrchJobFailed
from airflow_provider_rayorch.rayorch.summary import run_summary
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.sensors.rayorch import RayOrchRunSensor
from airflow_provider_rayorch.triggers import rayorch as triggers
from tests.unit.airflow.ending_triggers import ending_job_trigger

if TYPE_CHECKING:
    from airflow_provider_rayorch.triggers.rayorch import RayOrchJobTrigger

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def logged(monkeypatch) -> Lines:
    return Lines(monkeypatch)


def _run_manifest(store: RunStore) -> None:
    store.commit_microbatch("r", 1, _manifest(FAILURES))
    clean = {**_manifest([]), "microbatch": {"index": 0, "first_source": 0, "count": 4}}
    store.commit_microbatch("r", 0, clean)
    summary = run_summary(
        [m.to_dict() for m in store.manifest_records("r")],
        elapsed_s=7.25,
        run_id="r",
        max_failed_ratio=0.3,
    )
    store.write_run_manifest("r", summary)


def _sensor(tmp_path, logged, **kw) -> RayOrchRunSensor:
    kw.setdefault("deferrable", False)
    kw.setdefault("max_failed_ratio", 1.0)
    return logged(RayOrchRunSensor(task_id="run", run_id="r", run_store=str(tmp_path), **kw))


def _trigger(tmp_path, logged, monkeypatch, info) -> RayOrchJobTrigger:
    async def read(self, job_id):
        return info

    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_info", read)
    return logged(ending_job_trigger(tmp_path, max_failed_ratio=1.0))


def _end(trigger):
    async def first():
        async for event in trigger.run():
            return event
        return None

    return asyncio.run(first())


RUN_LINE = (
    "run r: 2 microbatches (1 success, 1 failed: mb 1), 8 sources, 6 present, 1 failed, "
    "1 suppressed; 18 grains dispatched, 2 retried (7.2 s)"
)


def test_the_run_task_logs_its_runs_counts_and_causes(tmp_path, logged) -> None:
    _run_manifest(RunStore(str(tmp_path)))
    _sensor(tmp_path, logged).poke({"ti": mock.MagicMock()})
    assert RUN_LINE in logged.lines
    assert "  source 6 suppressed: doc[6]/page[1]: blank page" in logged.lines


def test_the_run_trigger_ending_the_task_logs_the_same(tmp_path, logged, monkeypatch) -> None:
    _run_manifest(RunStore(str(tmp_path)))
    _end(_trigger(tmp_path, logged, monkeypatch, {"status": "SUCCEEDED", "message": ""}))
    assert RUN_LINE in logged.lines
    assert "  source 5 failed: doc[5]: cannot open the PDF" in logged.lines


def test_a_run_whose_job_ended_first_says_the_drivers_cause(tmp_path, logged) -> None:
    sensor = _sensor(tmp_path, logged, job_id="j")
    sensor.__dict__["hook"] = mock.MagicMock(
        **{
            "get_job_status.return_value": "FAILED",
            "get_job_info.return_value": {"status": "FAILED", "message": RAY_FAILED},
        }
    )
    with pytest.raises(RayOrchJobFailed) as failed:
        sensor.poke({"ti": mock.MagicMock()})
    message = str(failed.value)
    assert "ModuleNotFoundError: No module named 'cv2'" in message
    assert "truncated to" not in message  # the cause, not Ray's whole quote of the log
    assert "\x1b" not in message
    assert "[driver] Traceback (most recent call last):" in logged.lines


def test_the_run_trigger_says_the_drivers_cause(tmp_path, logged, monkeypatch) -> None:
    info = {"status": "FAILED", "message": RAY_FAILED}
    _end(_trigger(tmp_path, logged, monkeypatch, info))
    [error] = [line for line in logged.lines if "without a run manifest" in line]
    assert "ModuleNotFoundError: No module named 'cv2'" in error
    assert "truncated to" not in error
    assert "[driver] Traceback (most recent call last):" in logged.lines
