from __future__ import annotations

import json
import socket
from types import SimpleNamespace

import pytest

from airflow_provider_rayorch.exceptions import RayOrchClusterError
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.hooks.settings import RayOrchSettings, merge_runtime_env

pytestmark = pytest.mark.timeout(60)


def _conn(**kw):
    extra = kw.pop("extra", {})
    base = {"host": None, "port": None, "schema": None, "password": None}
    base.update(kw)
    return SimpleNamespace(extra_dejson=extra, **base)


@pytest.mark.parametrize(
    ("conn", "address"),
    [
        pytest.param(_conn(), None, id="empty-host-embedded"),
        pytest.param(_conn(host="head"), "http://head:8265", id="bare-host"),
        pytest.param(
            _conn(host="head", port=9000, schema="https"), "https://head:9000", id="parts"
        ),
        pytest.param(_conn(host="http://10.0.0.1:8265/"), "http://10.0.0.1:8265", id="url"),
        pytest.param(_conn(host="http://h", port=1234), "http://h:1234", id="url-no-port"),
    ],
)
def test_settings_address(conn, address) -> None:
    settings = RayOrchSettings.from_connection(conn)
    assert settings.address == address
    assert settings.embedded is (address is None)


def test_settings_extra_and_token_hidden_from_repr() -> None:
    conn = _conn(
        host="h",
        password="s3cr3t-token",
        extra={
            "runtime_env": json.dumps({"pip": ["x"]}),
            "run_store": "s3://b/runs",
            "namespace": "ns",
            "timeout": 3,
        },
    )
    settings = RayOrchSettings.from_connection(conn)
    assert settings.runtime_env == {"pip": ["x"]}
    assert settings.run_store == "s3://b/runs"
    assert settings.namespace == "ns"
    assert settings.timeout == 3.0
    assert "s3cr3t" not in repr(settings)


def test_missing_default_connection_means_embedded(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path))
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    hook = RayOrchHook()
    assert hook.embedded
    assert hook.run_store_uri == str(tmp_path / "rayorch" / "runs")
    assert hook.test_connection()[0] is True


def test_missing_named_connection_raises(monkeypatch) -> None:
    from airflow.sdk.exceptions import AirflowNotFoundException

    with pytest.raises(AirflowNotFoundException):
        _ = RayOrchHook("no_such_rayorch_conn").settings


def test_connection_from_env_masks_token(monkeypatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_RO_TEST",
        json.dumps({"conn_type": "rayorch", "host": "head", "password": "tok-123456789"}),
    )
    masked = []
    monkeypatch.setattr("airflow.sdk.log.mask_secret", lambda s, *a, **k: masked.append(s))
    hook = RayOrchHook("ro_test")
    assert hook.settings.address == "http://head:8265"
    assert hook.api.headers() == {"Authorization": "Bearer tok-123456789"}
    assert masked == ["tok-123456789"]


def test_address_override(monkeypatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    hook = RayOrchHook(address="http://127.0.0.1:1234/")
    assert hook.settings.address == "http://127.0.0.1:1234"
    assert not hook.embedded
    assert hook.dashboard_job_url("j1") == "http://127.0.0.1:1234/#/jobs/j1"


def test_merge_runtime_env() -> None:
    base = {"env_vars": {"A": "1", "B": "1"}, "py_modules": ["a"], "pip": ["x"]}
    over = {"env_vars": {"B": "2"}, "py_modules": ["b"], "pip": ["y"]}
    assert merge_runtime_env(base, over) == {
        "env_vars": {"A": "1", "B": "2"},
        "py_modules": ["a", "b"],
        "pip": ["y"],
    }
    assert merge_runtime_env(base, None) == base


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.timeout(60)  # a hang fails here, not at the suite's limit
def test_unreachable_cluster_fails_clearly(monkeypatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    hook = RayOrchHook(address=f"http://127.0.0.1:{_closed_port()}", timeout=2)
    with pytest.raises(RayOrchClusterError, match="cannot reach the Ray Jobs API"):
        hook.get_conn()
    ok, message = hook.test_connection()
    assert not ok
    assert "cannot reach" in message


@pytest.mark.timeout(60)  # the request's own timeout ends it; a hang fails here
def test_blackholed_cluster_times_out(monkeypatch) -> None:
    """A host that never answers (a listening socket that never accepts) is bounded too."""
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = server.getsockname()[1]
        hook = RayOrchHook(address=f"http://127.0.0.1:{port}", timeout=1)
        with pytest.raises(RayOrchClusterError, match="within 1s"):
            hook.check_reachable()


def test_async_job_info_unreachable(monkeypatch) -> None:
    import asyncio

    from airflow_provider_rayorch.hooks import jobs_api

    waits: list[float] = []

    async def no_wait(delay: float) -> None:  # a job's poll retries: nothing sleeps
        waits.append(delay)

    monkeypatch.setattr(jobs_api, "asleep", no_wait)
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    hook = RayOrchHook(address=f"http://127.0.0.1:{_closed_port()}", timeout=2)
    with pytest.raises(RayOrchClusterError, match="cannot reach"):
        asyncio.run(hook.aget_job_status("j"))
    assert len(waits) == 5


@pytest.fixture
def fake_jobs_api():
    """A tiny Jobs API on loopback that records the Authorization header it got."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[str] = []
    jobs = {
        "j1": {
            "status": "RUNNING",
            "submission_id": "j1",
            "message": "",
            "metadata": {"rayorch_run_id": "run-a"},
        }
    }

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _send(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            seen.append(self.headers.get("Authorization", ""))
            parts = self.path.strip("/").split("/")
            if self.path == "/api/version":
                self._send(200, {"ray_version": "2.60.0"})
            elif self.path == "/api/jobs/":
                self._send(200, list(jobs.values()))
            elif len(parts) == 3 and parts[2] in jobs:
                self._send(200, jobs[parts[2]])
            elif len(parts) == 4 and parts[3] == "logs":
                self._send(200, {"logs": "hello\n"})
            else:
                self._send(404, {"error": "no such job"})

        def do_POST(self):
            seen.append(self.headers.get("Authorization", ""))
            self._send(200, {"stopped": True})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()


def test_jobs_api_calls_send_the_token(monkeypatch, fake_jobs_api) -> None:
    address, seen = fake_jobs_api
    monkeypatch.setenv(
        "AIRFLOW_CONN_RO_FAKE",
        json.dumps({"conn_type": "rayorch", "host": address, "password": "tok-abcdefgh"}),
    )
    hook = RayOrchHook("ro_fake")
    assert hook.check_reachable() == "2.60.0"
    assert hook.get_job_status("j1") == "RUNNING"
    assert hook.get_job_status("nope") == "MISSING"
    assert hook.find_active_job("run-a") == "j1"
    assert hook.find_active_job("run-b") is None
    assert hook.get_job_logs("j1") == "hello\n"
    assert hook.stop_job("j1") is True
    assert seen
    assert set(seen) == {"Bearer tok-abcdefgh"}
