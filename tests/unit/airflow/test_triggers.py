from __future__ import annotations

import asyncio
import importlib
from types import SimpleNamespace

import pytest
from airflow.triggers.base import TaskFailedEvent, TaskSuccessEvent

from airflow_provider_rayorch.exceptions import RayOrchClusterUnavailable
from airflow_provider_rayorch.runs.run_state import read_run_state
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.triggers import rayorch as triggers
from airflow_provider_rayorch.triggers.rayorch import RayOrchJobTrigger, RayOrchMicrobatchTrigger
from tests.unit.airflow.ending_triggers import ending_job_trigger, ending_microbatch_trigger

pytestmark = pytest.mark.timeout(30)


def _roundtrip(trigger):
    path, kwargs = trigger.serialize()
    module, _, name = path.rpartition(".")
    clone = getattr(importlib.import_module(module), name)(**kwargs)
    assert clone.serialize() == (path, kwargs)
    return clone


def test_job_trigger_serialize_roundtrip() -> None:
    t = RayOrchJobTrigger(
        job_id="j",
        run_id="r",
        run_store="/s",
        rayorch_conn_id="c",
        address="http://h:1",
        poll_interval=0.5,
        tail_logs=False,
    )
    assert _roundtrip(t).poll_interval == 0.5


def test_microbatch_trigger_serialize_roundtrip() -> None:
    t = RayOrchMicrobatchTrigger(run_id="r", run_store="s3://b/x", index=3, job_id="j")
    assert _roundtrip(t).index == 3


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"job_id": "", "run_id": "r", "run_store": "/s"}, id="no-job"),
        pytest.param(
            {"job_id": "j", "run_id": "r", "run_store": "/s", "poll_interval": 0},
            id="zero-interval",
        ),
    ],
)
def test_job_trigger_validates(kwargs) -> None:
    with pytest.raises(ValueError, match=r"required|must be"):
        RayOrchJobTrigger(**kwargs)


def test_microbatch_trigger_validates_index() -> None:
    with pytest.raises(ValueError, match="index"):
        RayOrchMicrobatchTrigger(run_id="r", run_store="/s", index=-1)


async def _first(trigger):
    async for event in trigger.run():
        return event.payload
    return None


def test_job_trigger_fires_on_terminal_status(monkeypatch, tmp_path) -> None:
    statuses = iter(["PENDING", "RUNNING", "SUCCEEDED"])

    async def info(self, job_id):
        return {"status": next(statuses), "message": "done"}

    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_info", info)
    t = RayOrchJobTrigger(
        job_id="j", run_id="r", run_store=str(tmp_path), poll_interval=0.01, tail_logs=False
    )
    event = asyncio.run(_first(t))
    assert event == {
        "status": "success",
        "run_id": "r",
        "job_id": "j",
        "job_status": "SUCCEEDED",
        "message": "done",
    }


def test_job_trigger_reports_failure_and_unknown_job(monkeypatch, tmp_path) -> None:
    async def missing(self, job_id):
        return None

    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_info", missing)
    t = RayOrchJobTrigger(
        job_id="j", run_id="r", run_store=str(tmp_path), poll_interval=0.01, tail_logs=False
    )
    event = asyncio.run(_first(t))
    assert event["status"] == "error"
    assert event["job_status"] == "MISSING"


def test_job_trigger_gives_up_after_repeated_errors(monkeypatch, tmp_path) -> None:
    async def down(self, job_id):
        raise RayOrchClusterUnavailable("cannot reach")

    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_info", down)
    t = RayOrchJobTrigger(
        job_id="j", run_id="r", run_store=str(tmp_path), poll_interval=0.01, tail_logs=False
    )
    event = asyncio.run(_first(t))
    assert event["status"] == "error"
    assert "cannot reach" in event["message"]


def test_job_trigger_tails_logs_without_ending_on_stream_end(monkeypatch, tmp_path) -> None:
    statuses = iter(["RUNNING", "RUNNING", "RUNNING", "FAILED"])
    seen = []

    async def info(self, job_id):
        return {"status": next(statuses), "message": "boom"}

    async def tail(self, job_id):
        yield "line one\nline two"

    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_info", info)
    monkeypatch.setattr(triggers.RayOrchHook, "atail_job_logs", tail)
    t = RayOrchJobTrigger(job_id="j", run_id="r", run_store=str(tmp_path), poll_interval=0.01)
    monkeypatch.setattr(t.log, "info", lambda msg, *a: seen.append(msg % a))
    event = asyncio.run(_first(t))
    assert event["status"] == "error"
    assert event["job_status"] == "FAILED"
    assert any("line two" in s for s in seen)


def test_job_trigger_on_kill_stops_job(monkeypatch) -> None:
    stopped = []

    async def stop(self, job_id):
        stopped.append(job_id)
        return True

    monkeypatch.setattr(triggers.RayOrchHook, "astop_job", stop)
    t = RayOrchJobTrigger(job_id="j9", run_id="r", run_store="/s")
    asyncio.run(t.on_kill())
    assert stopped == ["j9"]


def test_microbatch_trigger_fires_when_manifest_commits(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    t = RayOrchMicrobatchTrigger(run_id="r", run_store=str(tmp_path), index=2, poll_interval=0.01)

    async def scenario():
        task = asyncio.create_task(_first(t))
        await asyncio.sleep(0.05)
        assert not task.done()
        store.commit_microbatch("r", 2, {"state": "success"})
        return await asyncio.wait_for(task, 5)

    assert asyncio.run(scenario()) == {
        "status": "committed",
        "index": 2,
        "summary": {"state": "success"},
    }


def test_microbatch_trigger_fails_when_job_ends_first(monkeypatch, tmp_path) -> None:
    async def status(self, job_id):
        return "FAILED"

    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_status", status)
    t = RayOrchMicrobatchTrigger(
        run_id="r", run_store=str(tmp_path), index=0, job_id="j", poll_interval=0.01
    )
    event = asyncio.run(_first(t))
    assert event["status"] == "error"
    assert "ended FAILED" in event["message"]


async def _end(trigger):
    async for event in trigger.run():
        return event
    return None


def _summary(failed: int = 0) -> dict:
    return {
        "run_id": "r",
        "state": "success",
        "sources": {
            "total": 4,
            "present": 4 - failed,
            "dropped": 0,
            "failed": failed,
            "suppressed": 0,
        },
        "failures": [{"source": 2, "outcome": "failed", "cause": "doc[2]: bad"}] * failed,
    }


def _with_log(monkeypatch, trigger):
    """The trigger, and the list its error-level log lines go to."""
    errors: list[str] = []
    monkeypatch.setattr(trigger.log, "error", lambda msg, *a: errors.append(msg % a))
    return trigger, errors


def _pushed(monkeypatch, trigger) -> list[tuple]:
    """Run ``trigger`` as the triggerer does (with its task instance); the XComs it
    pushes through the SDK's backend: ``(key, value, dag_id, task_id, run_id, map_index)``."""
    from airflow.sdk.execution_time.xcom import XCom

    pushed: list[tuple] = []

    async def aset(key, value, *, dag_id, task_id, run_id, map_index):
        pushed.append((key, value, dag_id, task_id, run_id, map_index))

    monkeypatch.setattr(XCom, "aset", aset)
    trigger.task_instance = SimpleNamespace(
        dag_id="d", task_id="microbatch", run_id="manual", map_index=2
    )
    return pushed


@pytest.mark.parametrize("failed", [0, 1], ids=["within-the-bar", "over-the-bar"])
def test_microbatch_trigger_with_a_bar_ends_the_task_itself(
    monkeypatch, tmp_path, failed: int
) -> None:
    """With the sensor's bar, a commit ends the task in the triggerer, with the XComs
    the sensor's worker would push: no resumed try for Airflow's stale-success race to
    fail (apache/airflow#72716)."""
    RunStore(str(tmp_path)).commit_microbatch("r", 2, _summary(failed))
    t, errors = _with_log(
        monkeypatch,
        ending_microbatch_trigger(tmp_path, 2, max_failed_ratio=0.0),
    )
    pushed = _pushed(monkeypatch, t)
    event = asyncio.run(_end(t))
    # pushed through the XCom backend, not as the event's own xcoms (Airflow 3.3 stores
    # those JSON-encoded twice: a downstream task would pull a string)
    assert event.xcoms is None
    where = ("d", "microbatch", "manual", 2)
    if failed:
        assert isinstance(event, TaskFailedEvent)
        judged = {**_summary(failed), "state": "failed"}
        assert pushed == [("rayorch_summary", judged, *where), ("return_value", judged, *where)]
        assert errors == [
            "microbatch 2 of run r: failed ratio 0.250 exceeds max_failed_ratio 0.0: "
            "source 2: doc[2]: bad"
        ]
    else:
        assert isinstance(event, TaskSuccessEvent)
        assert pushed == [("return_value", {**_summary(), "state": "success"}, *where)]
        assert errors == []


def test_an_ended_task_without_a_task_instance_pushes_nothing(tmp_path) -> None:
    """``dag.test()`` runs the trigger inline with no task instance set, then resumes
    the task, which pushes its XComs itself: the trigger pushes none."""
    RunStore(str(tmp_path)).commit_microbatch("r", 2, _summary())
    t = RayOrchMicrobatchTrigger(
        run_id="r", run_store=str(tmp_path), index=2, poll_interval=0.01, end_from_trigger=True
    )
    assert isinstance(asyncio.run(_end(t)), TaskSuccessEvent)


def test_microbatch_trigger_with_a_bar_fails_the_task_when_the_job_ends_first(
    monkeypatch, tmp_path
) -> None:
    async def status(self, job_id):
        return "STOPPED"

    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_status", status)
    t, errors = _with_log(
        monkeypatch,
        ending_microbatch_trigger(tmp_path, 0, max_failed_ratio=0.5, job_id="j"),
    )
    event = asyncio.run(_end(t))
    assert isinstance(event, TaskFailedEvent)
    assert event.xcoms is None
    [error] = errors
    assert error.startswith("Ray job j ended STOPPED before microbatch 0 of run r committed")
    assert "(an automatic retry, or a clear) resumes the run" in error


def _run_trigger(tmp_path, status: str):
    async def info(self, job_id):
        return {"status": status, "message": "driver exited"}

    return info, ending_job_trigger(tmp_path, max_failed_ratio=0.25)


def test_job_trigger_with_a_bar_ends_the_run_sensor_task_with_the_summary(
    monkeypatch, tmp_path
) -> None:
    RunStore(str(tmp_path)).write_run_manifest("r", _summary(failed=1))
    info, trigger = _run_trigger(tmp_path, "SUCCEEDED")
    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_info", info)
    t, errors = _with_log(monkeypatch, trigger)
    pushed = _pushed(monkeypatch, t)
    event = asyncio.run(_end(t))
    assert isinstance(event, TaskSuccessEvent)
    [(key, summary, *_)] = pushed
    assert key == "return_value"
    assert (summary["state"], summary["job_status"]) == ("success", "SUCCEEDED")
    assert errors == []


def test_job_trigger_with_a_bar_fails_without_a_run_manifest_and_records_why(
    monkeypatch, tmp_path
) -> None:
    info, trigger = _run_trigger(tmp_path, "SUCCEEDED")
    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_info", info)
    t, errors = _with_log(monkeypatch, trigger)
    event = asyncio.run(_end(t))
    assert isinstance(event, TaskFailedEvent)
    [error] = errors
    assert "Ray job j ended SUCCEEDED without a run manifest for run r: driver exited" in error
    # a job that ended without its driver recording anything: it never started the driver
    state = read_run_state(RunStore(str(tmp_path)), "r")
    assert (state.state, state.job_status) == ("not_started", "NOT_STARTED")
    assert "Ray job j ended SUCCEEDED" in (state.message or "")


def test_triggers_serialize_the_bar_and_whether_they_end_the_task() -> None:
    job = RayOrchJobTrigger(
        job_id="j", run_id="r", run_store="/s", max_failed_ratio=0.1, end_from_trigger=True
    )
    assert (_roundtrip(job).max_failed_ratio, _roundtrip(job).end_from_trigger) == (0.1, True)
    # a trigger serialized by an earlier version has neither: it fires, the task resumes
    old = RayOrchMicrobatchTrigger(run_id="r", run_store="/s", index=0)
    assert (_roundtrip(old).max_failed_ratio, _roundtrip(old).end_from_trigger) == (0.0, False)


def _closes(monkeypatch) -> list[str]:
    closed: list[str] = []

    async def aclose(self) -> None:
        closed.append(self.rayorch_conn_id)

    monkeypatch.setattr(triggers.RayOrchHook, "aclose", aclose)
    return closed


async def _all(trigger) -> list:
    return [event.payload async for event in trigger.run()]


def test_triggers_close_their_http_client_when_they_end(monkeypatch, tmp_path) -> None:
    """A triggerer runs trigger after trigger for weeks: each closes its client."""
    closed = _closes(monkeypatch)

    async def info(self, job_id):
        return {"status": "SUCCEEDED", "message": ""}

    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_info", info)
    job = RayOrchJobTrigger(
        job_id="j", run_id="r", run_store=str(tmp_path), poll_interval=0.01, tail_logs=False
    )
    assert [e["status"] for e in asyncio.run(_all(job))] == ["success"]
    RunStore(str(tmp_path)).commit_microbatch("r", 0, {"state": "success"})
    mb = RayOrchMicrobatchTrigger(run_id="r", run_store=str(tmp_path), index=0, poll_interval=0.01)
    assert [e["status"] for e in asyncio.run(_all(mb))] == ["committed"]
    assert closed == ["rayorch_default", "rayorch_default"]


def test_a_cancelled_trigger_closes_its_client(monkeypatch, tmp_path) -> None:
    """The triggerer cancels a trigger whose task was cleared or timed out."""
    closed = _closes(monkeypatch)
    mb = RayOrchMicrobatchTrigger(run_id="r", run_store=str(tmp_path), index=0, poll_interval=0.01)

    async def scenario() -> None:
        task = asyncio.create_task(_all(mb))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert closed == ["rayorch_default"]


def test_on_kill_closes_its_client(monkeypatch) -> None:
    closed = _closes(monkeypatch)

    async def stop(self, job_id):
        return True

    monkeypatch.setattr(triggers.RayOrchHook, "astop_job", stop)
    asyncio.run(RayOrchJobTrigger(job_id="j9", run_id="r", run_store="/s").on_kill())
    assert closed == ["rayorch_default"]
