"""No swallowed error changes behaviour.

- A repair asked for, and a run manifest that cannot be read: the task says so; it
  used to resume silently instead of repairing.
- A job that ended FAILED, and a last log read that fails: a compile or import error
  still fails the task at once (the exit code is in Ray's job info, the error line in
  Ray's message); it used to become a retried ``RayOrchJobFailed``.
- A TLS EOF during a restart is a dropped connection (transient), not a certificate
  failure: only certificate verification failures are permanent TLS errors.
"""

from __future__ import annotations

import json
import socket
import threading
from typing import TYPE_CHECKING, Any
from unittest import mock

import pytest

from airflow_provider_rayorch.exceptions import (
    RayOrchClusterError,
    RayOrchClusterUnavailable,
    RayOrchCompileFailed,
    RayOrchJobFailed,
    RayOrchPipelineNotImportable,
)
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.hooks.settings import RayOrchSettings
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator
from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs.store import RunStore

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)

COMPILE_LINE = 'RAYORCH_ERROR {"exit_code": 5, "message": "pipeline \'p:P\' does not compile: x"}'
RAY_MESSAGE = (
    "Job entrypoint command failed with exit code 5, last available logs (truncated to "
    f"20,000 chars):\nTraceback ...\n{COMPILE_LINE}\n"
)


def _context(try_number: int = 1) -> dict[str, Any]:
    ti = mock.MagicMock(
        dag_id="dag", run_id="manual__1", task_id="task", map_index=-1, try_number=try_number
    )
    ti.max_tries = try_number  # a clear raised max_tries to this try: the first after a clear
    ti.xcom_push.side_effect = lambda key, value: None
    return {"ti": ti, "task_state_store": None, "outlet_events": mock.MagicMock()}


def _op(tmp_path: Path, hook: Any, **kw: Any) -> RayOrchOperator:
    op = RayOrchOperator(
        task_id="task",
        pipeline="fake_pipelines:Square",
        sources=[1, 2],
        poll_interval=0,
        run_store=str(tmp_path),
        **kw,
    )
    op.__dict__["hook"] = hook
    return op


def _hook(tmp_path: Path) -> Any:
    hook = mock.MagicMock(embedded=False, is_local_head=False, run_store_uri=str(tmp_path))
    hook.settings = RayOrchSettings(address="http://h:8265", run_store=str(tmp_path))
    hook.run_store.side_effect = lambda uri=None: RunStore(uri or str(tmp_path))
    return hook


# -- the manifest read of a repair -------------------------------------------------------


def test_an_unreadable_run_manifest_fails_a_repair_instead_of_resuming(tmp_path) -> None:
    op = _op(tmp_path, _hook(tmp_path), repair="always")
    ctx = _context()
    run_id = op._run_id(ctx)
    (tmp_path / run_id).mkdir()
    (tmp_path / run_id / "run.json").write_text("{ this is not json")  # a torn or foreign file
    with pytest.raises(StoreError) as caught:
        op._wants_repair(ctx)
    message = str(caught.value)
    assert "repair" in message
    assert run_id in message


def test_no_run_manifest_yet_is_no_repair(tmp_path) -> None:
    op = _op(tmp_path, _hook(tmp_path), repair="always")
    assert op._wants_repair(_context()) is False


# -- the last log read of a failed job ---------------------------------------------------


def _failed_job(hook: Any, logs: Any) -> None:
    info = {"status": "FAILED", "message": RAY_MESSAGE, "driver_exit_code": 5}
    hook.get_job_info.return_value = info
    hook.get_job_logs.side_effect = logs


def test_a_failed_last_log_read_is_retried_and_keeps_the_compile_error(tmp_path) -> None:
    hook = _hook(tmp_path)
    _failed_job(hook, [RayOrchClusterUnavailable("HTTP 503"), COMPILE_LINE])
    with pytest.raises(RayOrchCompileFailed, match="does not compile"):
        _op(tmp_path, hook)._poll("j", _context())


def test_an_unreadable_log_still_tells_a_compile_error(tmp_path) -> None:
    hook = _hook(tmp_path)
    _failed_job(hook, RayOrchClusterError("HTTP 404: no log"))
    with pytest.raises(RayOrchCompileFailed, match="does not compile"):
        _op(tmp_path, hook)._poll("j", _context())


def test_the_exit_code_alone_tells_an_import_error(tmp_path) -> None:
    hook = _hook(tmp_path)
    hook.get_job_info.return_value = {
        "status": "FAILED",
        "message": "Job entrypoint command failed with exit code 4. No logs available.",
        "driver_exit_code": 4,
    }
    hook.get_job_logs.side_effect = RayOrchClusterError("HTTP 404")
    with pytest.raises(RayOrchPipelineNotImportable, match="exit code 4"):
        _op(tmp_path, hook)._poll("j", _context())


def test_deferred_end_with_an_unreadable_log_keeps_the_compile_error(tmp_path) -> None:
    hook = _hook(tmp_path)
    _failed_job(hook, RayOrchClusterError("HTTP 404"))
    event = {"status": "error", "job_id": "j", "job_status": "FAILED", "message": RAY_MESSAGE}
    with pytest.raises(RayOrchCompileFailed):
        _op(tmp_path, hook).execute_complete(_context(), event)


def test_a_job_that_failed_for_its_own_reasons_is_still_job_failed(tmp_path) -> None:
    hook = _hook(tmp_path)
    hook.get_job_info.return_value = {"status": "FAILED", "message": "OOM", "driver_exit_code": 1}
    hook.get_job_logs.return_value = "killed"
    with pytest.raises(RayOrchJobFailed, match="OOM"):
        _op(tmp_path, hook)._poll("j", _context())


# -- TLS ------------------------------------------------------------------------------------


@pytest.fixture
def tls_eof_server() -> Iterator[str]:
    """Accepts TCP connections and closes them mid-handshake (a restarting TLS server)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)  # accept wakes to see ``stop``
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            conn.shutdown(socket.SHUT_WR)  # EOF where the ServerHello should be
            conn.recv(1 << 16)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        server.close()
        thread.join(timeout=10)


def test_a_tls_eof_is_a_dropped_connection_not_a_certificate_failure(
    tls_eof_server: str, monkeypatch
) -> None:
    conn = {"conn_type": "rayorch", "host": tls_eof_server, "extra": {"timeout": 5}}
    monkeypatch.setenv("AIRFLOW_CONN_RO_EOF", json.dumps(conn))
    hook = RayOrchHook("ro_eof", answered_before=True)  # it answered before: a restart
    with pytest.raises(RayOrchClusterError) as caught:  # one try: the mapped error
        hook.api.send("GET", "/api/jobs/j", allow_404=True)
    message = str(caught.value)
    assert "EOF" in message
    assert "verification" not in message
    assert "CA bundle" not in message
    assert caught.value.transient
