from __future__ import annotations

import asyncio
import importlib

import pytest

from airflow_provider_rayorch.exceptions import RayOrchClusterError
from airflow_provider_rayorch.rayorch.store import RunStore
from airflow_provider_rayorch.triggers import rayorch as triggers
from airflow_provider_rayorch.triggers.rayorch import RayOrchJobTrigger, RayOrchMicrobatchTrigger

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
        raise RayOrchClusterError("cannot reach")

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
