"""A Jobs API that never answered this hook fails at once; one that did is retried
within the hook's budget, and so is a request about a job (its id says the API
answered the job's submit). The retry sleeps are injected: nothing waits."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.common.polling import RetryPolicy
from airflow_provider_rayorch.exceptions import RayOrchClusterError
from airflow_provider_rayorch.hooks import jobs_api
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.timeout(60)

HINT = "check the 'rayorch_default' connection's host"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Api:
    """A loopback Jobs API answering with ``code`` until :meth:`close`."""

    def __init__(self) -> None:
        self.code = 200
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                body = json.dumps({"ray_version": "2.60.0", "status": "RUNNING"}).encode()
                self.send_response(api.code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def api() -> Iterator[_Api]:
    server = _Api()
    try:
        yield server
    finally:
        if server.thread.is_alive():
            server.close()


@pytest.fixture(autouse=True)
def _no_default_connection(monkeypatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)


#: the budget paced by a 5 s poll interval
PACED = RetryPolicy(base_s=5)


def _list(monkeypatch, hook: RayOrchHook, sleeps: list[float]) -> object:
    """A request that names no job (the listing a resume starts with)."""
    monkeypatch.setattr(jobs_api, "sleep", sleeps.append)
    return hook.find_active_job("run-1")


def _poll(monkeypatch, hook: RayOrchHook, sleeps: list[float]) -> object:
    monkeypatch.setattr(jobs_api, "sleep", sleeps.append)
    return hook.get_job_status("j")


def test_first_contact_refused_fails_at_once_with_the_hint(monkeypatch) -> None:
    address = f"http://127.0.0.1:{_closed_port()}"
    hook = RayOrchHook(address=address, retry=PACED)
    sleeps: list[float] = []
    with pytest.raises(RayOrchClusterError) as caught:
        _list(monkeypatch, hook, sleeps)
    assert sleeps == []  # not one retry: nothing ever answered at this address
    assert caught.value.transient is False
    message = str(caught.value)
    assert "refused" in message
    assert address in message
    assert HINT in message
    assert "gave up after" not in message


def test_first_contact_dns_failure_fails_at_once(monkeypatch) -> None:
    hook = RayOrchHook(address="http://no-such-host.invalid:8265", retry=PACED)
    sleeps: list[float] = []
    with pytest.raises(RayOrchClusterError) as caught:
        _list(monkeypatch, hook, sleeps)
    assert sleeps == []
    assert HINT in str(caught.value)


def test_refused_after_an_answer_is_transient_and_retried(monkeypatch, api: _Api) -> None:
    hook = RayOrchHook(address=api.address, retry=PACED)
    assert hook.check_reachable() == "2.60.0"
    api.close()  # the dashboard goes away after answering once (a restart)
    sleeps: list[float] = []
    with pytest.raises(RayOrchClusterError) as caught:
        _poll(monkeypatch, hook, sleeps)
    assert sleeps == [5, 10, 20, 40, 60]  # the whole budget, then a clear error
    message = str(caught.value)
    assert "gave up after 6 tries" in message
    assert "refused" in message


def test_a_transient_answer_does_not_count_as_contact(monkeypatch, api: _Api) -> None:
    """A 503 (a proxy whose backend is down) is retried but is not the Jobs API answering."""
    api.code = 503
    hook = RayOrchHook(address=api.address, retry=PACED)
    sleeps: list[float] = []
    with pytest.raises(RayOrchClusterError, match="HTTP 503"):
        _poll(monkeypatch, hook, sleeps)
    assert len(sleeps) == 5
    api.close()
    with pytest.raises(RayOrchClusterError) as caught:
        _list(monkeypatch, hook, sleeps := [])
    assert sleeps == []
    assert caught.value.transient is False


def test_a_request_about_a_job_retries_a_refused_first_contact(monkeypatch) -> None:
    """A job's id says its Jobs API answered (the job's submit): a poll from a new hook
    (a resumed try, the triggerer) rides out a dashboard restarting."""
    address = f"http://127.0.0.1:{_closed_port()}"
    hook = RayOrchHook(address=address, retry=PACED)
    sleeps: list[float] = []
    with pytest.raises(RayOrchClusterError) as caught:
        _poll(monkeypatch, hook, sleeps)
    assert sleeps == [5, 10, 20, 40, 60]
    message = str(caught.value)
    assert "gave up after 6 tries" in message
    assert "refused" in message
    assert HINT in message


def test_async_request_about_a_job_retries_a_refused_first_contact(monkeypatch) -> None:
    waits: list[float] = []

    async def no_wait(delay: float) -> None:
        waits.append(delay)

    monkeypatch.setattr(jobs_api, "asleep", no_wait)
    hook = RayOrchHook(address=f"http://127.0.0.1:{_closed_port()}", retry=PACED)

    async def poll() -> object:
        return await hook.aget_job_status("j")

    with pytest.raises(RayOrchClusterError, match="gave up after 6 tries") as caught:
        asyncio.run(poll())
    assert waits == [5, 10, 20, 40, 60]
    assert HINT in str(caught.value)


def test_async_refused_after_an_answer_is_retried(monkeypatch, api: _Api) -> None:
    waits: list[float] = []

    async def no_wait(delay: float) -> None:
        waits.append(delay)

    hook = RayOrchHook(address=api.address, retry=PACED)

    async def poll() -> object:
        await hook.aget_job_status("j")  # answered
        api.close()
        monkeypatch.setattr(jobs_api, "asleep", no_wait)
        return await hook.aget_job_status("j")

    with pytest.raises(RayOrchClusterError, match="gave up after 6 tries"):
        asyncio.run(poll())
    assert waits == [5, 10, 20, 40, 60]


def test_ui_test_action_does_not_name_the_temporary_connection_id(monkeypatch) -> None:
    """Airflow's Test action tests a connection under a random id: no message names it."""
    conn = {"conn_type": "rayorch", "host": f"http://127.0.0.1:{_closed_port()}"}
    monkeypatch.setenv("AIRFLOW_CONN_YNHPBMQZ", json.dumps(conn))
    ok, message = RayOrchHook("YNHpBmqZ").test_connection()
    assert not ok
    assert "YNHpBmqZ" not in message
    assert "check this connection's host/port" in message


def test_ui_test_action_tls_and_verify_messages_name_no_id(monkeypatch, tmp_path) -> None:
    missing = tmp_path / "no-such-ca.pem"
    conn = {
        "conn_type": "rayorch",
        "host": f"https://127.0.0.1:{_closed_port()}",
        "extra": {"verify": str(missing)},
    }
    monkeypatch.setenv("AIRFLOW_CONN_YNHPBMQZ", json.dumps(conn))
    ok, message = RayOrchHook("YNHpBmqZ").test_connection()
    assert not ok
    assert "YNHpBmqZ" not in message
    assert "this connection's extra `verify`" in message


def test_task_time_errors_still_name_the_connection_id(monkeypatch) -> None:
    conn = {"conn_type": "rayorch", "host": f"http://127.0.0.1:{_closed_port()}"}
    monkeypatch.setenv("AIRFLOW_CONN_RO_TASK", json.dumps(conn))
    with pytest.raises(RayOrchClusterError) as caught:
        _poll(monkeypatch, RayOrchHook("ro_task"), [])
    assert "check the 'ro_task' connection's host" in str(caught.value)


def test_a_caller_that_knows_the_api_answered_before_gets_retries(monkeypatch) -> None:
    """A sensor or trigger polling a job that an earlier task submitted can say so."""
    address = f"http://127.0.0.1:{_closed_port()}"
    hook = RayOrchHook(address=address, answered_before=True, retry=PACED)
    sleeps: list[float] = []
    with pytest.raises(RayOrchClusterError, match="gave up after 6 tries"):
        _list(monkeypatch, hook, sleeps)  # a request naming no job: retried only so
    assert sleeps == [5, 10, 20, 40, 60]
