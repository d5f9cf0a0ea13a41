"""Pollers of a submitted job write nothing while it runs and keep
transient tolerance from their first request."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

import pytest

from airflow_provider_rayorch.hooks import jobs_api
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore
from airflow_provider_rayorch.sensors.rayorch import RayOrchMicrobatchSensor, RayOrchRunSensor
from airflow_provider_rayorch.triggers.rayorch import RayOrchJobTrigger, RayOrchMicrobatchTrigger

pytestmark = pytest.mark.timeout(60)

MB = {"index": 0, "first_source": 0, "count": 2}


@pytest.fixture(autouse=True)
def _no_default_connection(monkeypatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _LateApi:
    """A Jobs API on ``port`` that is not up until :meth:`start` (a dashboard restart)."""

    def __init__(self, port: int, status: str) -> None:
        self.port, self.status, self.requests = port, status, 0
        self.server: ThreadingHTTPServer | None = None

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        if self.server is not None:
            return
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                api.requests += 1
                body = json.dumps({"status": api.status, "message": "", "job_id": "j"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


@pytest.fixture
def late_api():
    apis: list[_LateApi] = []

    def make(status: str = "RUNNING") -> _LateApi:
        apis.append(_LateApi(_free_port(), status))
        return apis[-1]

    yield make
    for api in apis:
        api.close()


def _ctx() -> dict:
    return {"ti": mock.MagicMock()}


def _retry_starts(monkeypatch, api: _LateApi, waits: list[float]) -> None:
    """The first retry's wait brings the API up (sync pollers)."""

    def sleep(delay: float) -> None:
        waits.append(delay)
        api.start()

    monkeypatch.setattr(jobs_api, "sleep", sleep)  # the hook's request path


# -- a refused first request of a poller is transient ---------------
def test_microbatch_sensor_poke_survives_a_refused_first_request(
    tmp_path, monkeypatch, late_api
) -> None:
    api = late_api("RUNNING")
    waits: list[float] = []
    _retry_starts(monkeypatch, api, waits)
    sensor = RayOrchMicrobatchSensor(
        task_id="mb",
        microbatch=MB,
        run_id="r",
        run_store=str(tmp_path),
        job_id="j",
        ray_address=api.address,
        deferrable=False,
    )
    assert sensor.poke(_ctx()).is_done is False
    assert waits == [5.0]  # one retry under the budget, then the answer
    assert api.requests >= 1


def test_run_sensor_poke_survives_a_refused_first_request(tmp_path, monkeypatch, late_api) -> None:
    api = late_api("RUNNING")
    waits: list[float] = []
    _retry_starts(monkeypatch, api, waits)
    sensor = RayOrchRunSensor(
        task_id="run",
        run_id="r",
        run_store=str(tmp_path),
        job_id="j",
        ray_address=api.address,
        deferrable=False,
    )
    assert sensor.poke(_ctx()).is_done is False
    assert waits == [5.0]


def _async_retry_starts(monkeypatch, api: _LateApi, waits: list[float]) -> None:
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:
        waits.append(delay)
        api.start()
        await real_sleep(0)

    monkeypatch.setattr(jobs_api, "asleep", sleep)  # the hook's retry waits
    monkeypatch.setattr(asyncio, "sleep", sleep)  # the trigger's poll waits


def test_job_trigger_survives_a_refused_first_request(tmp_path, monkeypatch, late_api) -> None:
    api = late_api("SUCCEEDED")
    waits: list[float] = []
    _async_retry_starts(monkeypatch, api, waits)
    trigger = RayOrchJobTrigger(
        job_id="j", run_id="r", run_store=str(tmp_path), address=api.address, tail_logs=False
    )

    async def first() -> dict:
        async for event in trigger.run():
            return dict(event.payload)
        raise AssertionError("no event")

    event = asyncio.run(first())
    assert event["status"] == "success", event
    assert waits[:1] == [5.0]


def test_microbatch_trigger_survives_a_refused_first_request(
    tmp_path, monkeypatch, late_api
) -> None:
    api = late_api("RUNNING")
    waits: list[float] = []
    _async_retry_starts(monkeypatch, api, waits)
    store = RunStore(str(tmp_path))
    trigger = RayOrchMicrobatchTrigger(
        run_id="r", run_store=str(tmp_path), index=0, job_id="j", address=api.address
    )
    summary = {
        "run_id": "r",
        "state": "success",
        "microbatch": dict(MB),
        "sources": {"total": 2, "present": 2, "dropped": 0, "failed": 0, "suppressed": 0},
    }

    async def first() -> dict:
        async for event in trigger.run():
            return dict(event.payload)
        raise AssertionError("no event")

    real_start = api.start

    def start_and_commit() -> None:  # the poll after the answer sees the commit
        real_start()
        if api.requests:
            store.commit_microbatch("r", 0, summary)

    api.start = start_and_commit  # type: ignore[method-assign]
    event = asyncio.run(first())
    assert event["status"] == "committed", event
    assert waits[0] == 5.0


# -- the driver owns the run's state; pollers of a running job write nothing ---
def _planned(tmp_path) -> RunStore:
    store = RunStore(str(tmp_path))
    store.write_plan(
        PlanRecord(run_id="r", pipeline="pkg.mod:P", fingerprint="f" * 64, sources=["a", "b"])
    )
    return store


def _files(tmp_path) -> set[str]:
    return {name for _, _, names in os.walk(tmp_path / "r") for name in names}


def test_sensors_of_a_running_job_write_nothing(tmp_path) -> None:
    _planned(tmp_path)
    before = _files(tmp_path)
    running = mock.MagicMock(**{"get_job_status.return_value": "RUNNING"})
    microbatch = RayOrchMicrobatchSensor(
        task_id="mb", microbatch=MB, run_id="r", run_store=str(tmp_path), job_id="j",
        deferrable=False,
    )  # fmt: skip
    run = RayOrchRunSensor(
        task_id="run", run_id="r", run_store=str(tmp_path), job_id="j", deferrable=False
    )
    for sensor in (microbatch, run):
        sensor.__dict__["hook"] = running
        assert sensor.poke(_ctx()).is_done is False
    assert _files(tmp_path) == before


def test_triggers_of_a_running_job_write_nothing(tmp_path, monkeypatch, late_api) -> None:
    _planned(tmp_path)
    before = _files(tmp_path)
    api = late_api("RUNNING")
    api.start()
    real_sleep = asyncio.sleep
    for trigger in (
        RayOrchJobTrigger(job_id="j", run_id="r", run_store=str(tmp_path), address=api.address),
        RayOrchMicrobatchTrigger(
            run_id="r", run_store=str(tmp_path), index=0, job_id="j", address=api.address
        ),
    ):
        api.status = "RUNNING"
        seen: list[set[str]] = []

        async def sleep(delay: float, seen: list[set[str]] = seen) -> None:
            seen.append(_files(tmp_path))
            api.status = "STOPPED"
            await real_sleep(0)

        monkeypatch.setattr(asyncio, "sleep", sleep)

        async def first(trigger=trigger) -> dict:
            async for event in trigger.run():
                return dict(event.payload)
            raise AssertionError("no event")

        asyncio.run(first())
        assert seen, "the trigger never waited"
        assert seen[0] == before
