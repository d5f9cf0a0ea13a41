"""A microbatch task's log says what its microbatch did, and why its job failed.

Every way a microbatch task ends logs the same story: the sensor's poke, its
deferrable start on a committed microbatch, its resume on a worker, and its trigger
ending the task in the triggerer. Task and trigger logs are structlog loggers (not
seen by ``caplog``): :class:`Lines` records what they log.
"""

from __future__ import annotations

import asyncio
import re
from types import SimpleNamespace
from unittest import mock

import pytest

from airflow_provider_rayorch.exceptions import RayOrchFailedRatioExceeded, RayOrchJobFailed
from airflow_provider_rayorch.rayorch.summary import microbatch_summary
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.runs.uris import driver_log_parts
from airflow_provider_rayorch.sensors.rayorch import RayOrchMicrobatchSensor
from airflow_provider_rayorch.triggers import rayorch as triggers
from airflow_provider_rayorch.triggers.rayorch import RayOrchMicrobatchTrigger
from tests.unit.airflow.ending_triggers import ending_microbatch_trigger

pytestmark = pytest.mark.timeout(30)

MB = {"index": 1, "first_source": 4, "count": 4}

RAY_FAILED = (
    "Job entrypoint command failed with exit code 1, last available logs (truncated to "
    "20,000 chars):\n"
    "microbatch 1/3 committed: 4 sources, 4 present, 0 failed, 0 suppressed (1.0 s, 4 docs/s)\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/pipelines/docs.py", line 12, in run\n'
    "    import cv2\n"
    "\x1b[31mModuleNotFoundError: No module named 'cv2'\x1b[0m\n"
)


def _manifest(failures: list[tuple[int, str, str]], *, count: int = 4) -> dict:
    counts = {"present": count - len(failures), "failed": 0, "suppressed": 0, "dropped": 0}
    for _, outcome, _ in failures:
        counts[outcome] += 1
    return microbatch_summary(
        index=1,
        first_source=4,
        count=count,
        outcome_counts=counts,
        entities={"doc": count, "page": 3 * count},
        grains={"dispatched": 9, "retried": 1},
        failures=[{"source": s, "outcome": o, "cause": c} for s, o, c in failures],
        elapsed_s=2.5,
        run_id="r",
    )


FAILURES = [
    (5, "failed", "doc[5]: cannot open the PDF"),
    (6, "suppressed", "doc[6]/page[1]: blank page"),
]


class Lines:
    """What the task or trigger objects it is given log, formatted, in order."""

    def __init__(self, monkeypatch) -> None:
        self.monkeypatch = monkeypatch
        self.lines: list[str] = []

    def __call__(self, obj):
        for level in ("debug", "info", "warning", "error"):
            self.monkeypatch.setattr(
                obj.log, level, lambda msg, *a, **_: self.lines.append(str(msg) % a)
            )
        return obj

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@pytest.fixture
def logged(monkeypatch) -> Lines:
    return Lines(monkeypatch)


def _sensor(tmp_path, logged=None, **kw):
    kw.setdefault("deferrable", False)
    sensor = RayOrchMicrobatchSensor(
        task_id="mb", microbatch=MB, run_id="r", run_store=str(tmp_path), **kw
    )
    return sensor if logged is None else logged(sensor)


def _ctx():
    return {"ti": mock.MagicMock()}


def _poke(tmp_path, logged):
    return _sensor(tmp_path, logged, max_failed_ratio=1.0).poke(_ctx())


def _execute_committed(tmp_path, logged):
    return _sensor(tmp_path, logged, deferrable=True, max_failed_ratio=1.0).execute(_ctx())


def _resume_on_worker(tmp_path, logged):
    summary = plain(RunStore(str(tmp_path)).manifest_record("r", 1))
    event = {"status": "committed", "index": 1, "summary": summary}
    sensor = _sensor(tmp_path, logged, deferrable=True, max_failed_ratio=1.0)
    return sensor.execute_complete(_ctx(), event)


def _trigger_ends_task(tmp_path, logged):
    trigger = logged(ending_microbatch_trigger(tmp_path, 1, max_failed_ratio=1.0))

    async def first():
        async for event in trigger.run():
            return event
        return None

    return asyncio.run(first())


@pytest.mark.parametrize(
    "end",
    [
        pytest.param(_poke, id="poke"),
        pytest.param(_execute_committed, id="deferrable-start-on-a-commit"),
        pytest.param(_resume_on_worker, id="resume-on-a-worker"),
        pytest.param(_trigger_ends_task, id="trigger-ends-the-task"),
    ],
)
def test_a_microbatch_with_failures_logs_its_counts_and_each_cause(tmp_path, logged, end) -> None:
    RunStore(str(tmp_path)).commit_microbatch("r", 1, _manifest(FAILURES))
    end(tmp_path, logged)
    text = logged.text
    assert (
        "microbatch 1 (sources 4-7) of run r committed: 4 sources, 2 present, 1 failed, "
        "1 suppressed; 9 grains dispatched, 1 retried (2.5 s)"
    ) in text
    assert "source 5 failed: doc[5]: cannot open the PDF" in text
    assert "source 6 suppressed: doc[6]/page[1]: blank page" in text


def test_a_microbatch_over_its_bar_logs_its_causes_before_failing(tmp_path, logged) -> None:
    RunStore(str(tmp_path)).commit_microbatch("r", 1, _manifest(FAILURES))
    with pytest.raises(RayOrchFailedRatioExceeded):
        _sensor(tmp_path, logged).poke(_ctx())
    assert "source 6 suppressed: doc[6]/page[1]: blank page" in logged.text


def test_failures_beyond_the_cap_are_counted_not_listed(tmp_path, logged) -> None:
    many = [(4 + i, "failed", f"doc[{4 + i}]: bad") for i in range(30)]
    RunStore(str(tmp_path)).commit_microbatch("r", 1, _manifest(many, count=30))
    _poke(tmp_path, logged)
    assert len([line for line in logged.lines if "failed: doc[" in line]) == 20
    assert "and 10 more failed or suppressed sources" in logged.text


def _failed_job(get_job_info):
    return mock.MagicMock(
        **{"get_job_status.return_value": "FAILED", "get_job_info.side_effect": get_job_info}
    )


def test_a_job_that_failed_before_the_commit_says_the_drivers_cause(tmp_path, logged) -> None:
    sensor = _sensor(tmp_path, logged, job_id="j")
    sensor.__dict__["hook"] = _failed_job(lambda _: {"status": "FAILED", "message": RAY_FAILED})
    with pytest.raises(RayOrchJobFailed) as failed:
        sensor.poke(_ctx())
    message = str(failed.value)
    assert message.startswith("Ray job j ended FAILED before microbatch 1 of run r committed")
    assert "ModuleNotFoundError: No module named 'cv2'" in message
    assert re.search(r"\b(clear|retry|next try)\b", message)  # and what to do
    assert "\x1b" not in message
    # the driver's last lines, for the context of the cause
    assert "[driver] Traceback (most recent call last):" in logged.lines


def test_the_drivers_error_line_is_the_cause(tmp_path) -> None:
    error = (
        'RAYORCH_ERROR {"exit_code": 3, "message": "run \'r\': the pipeline compiled here has '
        'fingerprint abc, the stored plan has def"}'
    )
    sensor = _sensor(tmp_path, job_id="j")
    sensor.__dict__["hook"] = _failed_job(
        lambda job_id: {"status": "FAILED", "message": f"exit code 3\n{error}\n"}
    )
    with pytest.raises(RayOrchJobFailed, match="run 'r': the pipeline compiled here has"):
        sensor.poke(_ctx())


def test_a_job_the_cluster_forgot_is_explained_by_the_stored_driver_log(tmp_path) -> None:
    """The head is gone with its job log: the driver's log in the run store says why."""
    store = RunStore(str(tmp_path))
    store.write_bytes(
        driver_log_parts("r", 1),
        b"microbatch 1/3 committed: ...\nTraceback (most recent call last):\n"
        b"  File x\nMemoryError: the page images did not fit\n",
    )
    sensor = _sensor(tmp_path, job_id="j")
    sensor.__dict__["hook"] = mock.MagicMock(
        **{"get_job_status.return_value": "STOPPED", "get_job_info.return_value": None}
    )
    with pytest.raises(RayOrchJobFailed) as failed:
        sensor.poke(_ctx())
    message = str(failed.value)
    assert "MemoryError: the page images did not fit" in message
    assert "logs/driver-1.log" in message  # where the whole log is


def test_the_trigger_logs_the_drivers_cause_when_the_job_ends_first(monkeypatch, tmp_path) -> None:
    async def status(self, job_id):
        return "FAILED"

    async def info(self, job_id):
        return {"status": "FAILED", "message": RAY_FAILED}

    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_status", status)
    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_info", info)
    errors: list[str] = []
    infos: list[str] = []
    for end_from_trigger in (True, False):
        t = RayOrchMicrobatchTrigger(
            run_id="r",
            run_store=str(tmp_path),
            index=1,
            job_id="j",
            poll_interval=0.01,
            end_from_trigger=end_from_trigger,
        )
        monkeypatch.setattr(t.log, "error", lambda msg, *a: errors.append(msg % a))
        monkeypatch.setattr(t.log, "info", lambda msg, *a: infos.append(msg % a))
        t.task_instance = SimpleNamespace(dag_id="d", task_id="mb", run_id="m", map_index=1)

        async def first(trigger=t):
            async for event in trigger.run():
                return event
            return None

        event = asyncio.run(first())
        if not end_from_trigger:  # the worker resumes and raises the event's message
            errors.append(event.payload["message"])
    cause = "ModuleNotFoundError: No module named 'cv2'"
    assert len(errors) == 2
    assert all("before microbatch 1 of run r committed" in e for e in errors)
    assert all(cause in e for e in errors)
    assert any(line.endswith("[driver] Traceback (most recent call last):") for line in infos)
