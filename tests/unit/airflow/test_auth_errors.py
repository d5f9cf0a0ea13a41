"""HTTP 401/403 name which token was sent and where it came from, never its value; a
refused submit is recorded as NOT_STARTED; the token reaches no log or XCom."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

import pytest
from structlog.testing import capture_logs

from airflow_provider_rayorch.exceptions import RayOrchAuthError
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.store import RunStore

pytestmark = pytest.mark.timeout(60)

GOOD = "the-cluster-token-0123456789"


@pytest.fixture
def token_api():
    """A Jobs API that wants ``Bearer GOOD``: 401 without a token, 403 with another."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _answer(self) -> None:
            auth = self.headers.get("Authorization", "")
            if not auth:
                code, body = 401, b"Unauthorized: Missing authentication token"
            elif auth != f"Bearer {GOOD}":
                code, body = 403, b"Forbidden: Invalid authentication token"
            else:
                code, body = 200, json.dumps({"ray_version": "2.60.0"}).encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _conn(monkeypatch, address: str, password: str | None) -> None:
    conn = {"conn_type": "rayorch", "host": address}
    if password:
        conn["password"] = password
    monkeypatch.setenv("AIRFLOW_CONN_RO_AUTH", json.dumps(conn))


def test_401_without_a_token_says_none_was_sent_and_the_fix(monkeypatch, token_api) -> None:
    _conn(monkeypatch, token_api, None)
    with pytest.raises(RayOrchAuthError) as caught:
        RayOrchHook("ro_auth").check_reachable()
    message = str(caught.value)
    assert "HTTP 401" in message
    assert "carried no token" in message
    assert "set its token as the 'ro_auth' connection's password" in message


def test_403_names_the_connection_token_but_not_its_value(monkeypatch, token_api) -> None:
    wrong = "a-wrong-token-9876543210"
    _conn(monkeypatch, token_api, wrong)
    with pytest.raises(RayOrchAuthError) as caught:
        RayOrchHook("ro_auth").find_active_job("r")
    message = str(caught.value)
    assert "HTTP 403" in message
    assert "the token from the 'ro_auth' connection's password" in message
    assert wrong not in message
    assert GOOD not in message


def test_refused_submit_is_recorded_as_not_started(monkeypatch, token_api, tmp_path) -> None:
    from airflow_provider_rayorch.operators.microbatch import RayOrchSubmitOperator

    wrong = "a-wrong-token-1111111111"
    _conn(monkeypatch, token_api, wrong)
    monkeypatch.syspath_prepend(str(tmp_path))
    op = RayOrchSubmitOperator(
        task_id="submit",
        pipeline="fake_pipelines:Square",
        sources=[1, 2, 3],
        input_batch_size=2,
        rayorch_conn_id="ro_auth",
        run_store=str(tmp_path / "runs"),
        poll_interval=0.01,
    )
    ti = mock.MagicMock(dag_id="d", run_id="r", task_id="submit", map_index=-1, try_number=1)
    pushed: dict = {}
    ti.xcom_push.side_effect = lambda key, value: pushed.__setitem__(key, value)
    with capture_logs() as logs, pytest.raises(RayOrchAuthError):
        op.execute({"ti": ti, "task_state_store": None})
    state = plain(RunStore(str(tmp_path / "runs")).job_state_record(pushed["rayorch_run_id"]))
    assert state is not None
    assert state["job_status"] == "NOT_STARTED"
    assert "HTTP 403" in state["message"]
    everything = json.dumps([pushed, state, [str(e) for e in logs]], default=str)
    assert wrong not in everything
