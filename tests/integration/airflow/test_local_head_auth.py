"""The loopback Ray head and the embedded driver on a machine that already ran Ray.

Ray 2.60 writes ``~/.ray/auth_token`` on any plain ``ray.init()``; ``ray start --head``
with ``RAY_AUTH_MODE`` unset then turns token auth on. These tests give the process
such a HOME (and no ``RAY_AUTH_*`` variable), as on any user's machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
import time
from pathlib import Path

import pytest

from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.operators.local_head import start_local_head, stop_local_head

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def home_with_ray_token(tmp_path, monkeypatch) -> tuple[Path, str]:
    """A HOME whose ~/.ray/auth_token was left by an earlier ray.init()."""
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    token = secrets.token_hex(16)
    (home / ".ray" / "auth_token").write_text(token)
    monkeypatch.setenv("HOME", str(home))
    for var in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    return home, token


def _wait_terminal(hook: RayOrchHook, job_id: str, deadline_s: float = 120.0) -> str:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        status = str(hook.get_job_status(job_id))
        if status not in ("PENDING", "RUNNING"):
            return status
        time.sleep(0.5)
    raise AssertionError(f"job {job_id} did not end within {deadline_s}s")


JOB = "import ray; ray.init(); print('cpus', int(ray.cluster_resources()['CPU']))"


@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    ("auth_mode", "conn_password"),
    [
        pytest.param(None, None, id="mode-unset"),
        pytest.param("disabled", None, id="mode-disabled"),
        pytest.param("token", "a-stale-connection-token", id="mode-token-and-connection-token"),
    ],
)
def test_loopback_head_submits_when_home_holds_a_ray_token(
    home_with_ray_token, monkeypatch, caplog, auth_mode, conn_password
) -> None:
    """Whatever the machine's token state, the hook sends the head's token
    and a job on the head connects to its Ray."""
    home, machine_token = home_with_ray_token
    if auth_mode is not None:
        monkeypatch.setenv("RAY_AUTH_MODE", auth_mode)
    if conn_password is not None:
        conn = {"conn_type": "rayorch", "host": "http://127.0.0.1:1", "password": conn_password}
        monkeypatch.setenv("AIRFLOW_CONN_RAYORCH_DEFAULT", json.dumps(conn))
    from structlog.testing import capture_logs

    from airflow_provider_rayorch.operators.local_head import (
        RayLocalHeadStartOperator,
        RayLocalHeadStopOperator,
    )

    caplog.set_level("DEBUG")
    captured = contextlib.ExitStack()
    logs = captured.enter_context(capture_logs())  # every task/hook log line of this test
    head = RayLocalHeadStartOperator(task_id="ray_head", num_cpus=1).execute({})  # its XCom
    try:
        hook = RayOrchHook(address=head["address"])
        assert hook.is_local_head
        assert hook.find_active_job("no-such-run") is None
        job_id = hook.submit_job(
            f'{sys.executable} -c "{JOB}"', submission_id=f"t-{secrets.token_hex(4)}"
        )
        assert _wait_terminal(hook, job_id) == "SUCCEEDED", hook.get_job_logs(job_id)[-2000:]
        assert "cpus 1" in hook.get_job_logs(job_id)
        # XCom (the head's info) carries at most a token file path, never a token.
        info = json.dumps(head)
        token_path = head.get("token_path")
        assert token_path
        assert os.stat(token_path).st_mode & 0o777 == 0o600
        head_token = Path(token_path).read_text().strip()
        assert head_token not in info
        assert machine_token not in info
        # The machine's own token file is left as it was.
        assert (home / ".ray" / "auth_token").read_text() == machine_token
    finally:
        RayLocalHeadStopOperator(task_id="stop_ray_head", head=head).execute({})
        captured.close()
    assert any("Ray head up at" in str(e.get("event")) for e in logs)
    assert head_token not in caplog.text
    assert head_token not in json.dumps([dict(e) for e in logs], default=str)
    assert RayOrchHook(address=head["address"]).is_local_head is False


@pytest.mark.timeout(240)
def test_embedded_driver_leaves_home_ray_untouched(tmp_path, monkeypatch) -> None:
    """The embedded driver's private Ray never writes ~/.ray/auth_token."""
    from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "unit" / "airflow"))
    from unittest import mock

    ti = mock.MagicMock(dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    op = RayOrchOperator(
        task_id="t",
        pipeline="engine_pipelines:TwoOutputs",
        sources=[1, 2, 3],
        run_store=str(tmp_path / "runs"),
    )
    summary = op.execute({"ti": ti, "task_state_store": None, "outlet_events": mock.MagicMock()})
    assert summary["sources"]["present"] == 3
    assert not (home / ".ray").exists(), sorted(p.name for p in home.rglob("*"))


@pytest.mark.timeout(240)
def test_local_py_modules_are_uploaded_through_the_hook(home_with_ray_token, tmp_path) -> None:
    """A job's local ``py_modules`` travel through the hook's one request path."""
    package = tmp_path / "shipped_mod_for_test"
    package.mkdir()
    (package / "__init__.py").write_text("ANSWER = 'shipped-42'\n")
    head = start_local_head(num_cpus=1, timeout=120)
    try:
        hook = RayOrchHook(address=head["address"])
        job_id = hook.submit_job(
            f'{sys.executable} -c "import shipped_mod_for_test as m; print(m.ANSWER)"',
            submission_id=f"t-{secrets.token_hex(4)}",
            runtime_env={"py_modules": [str(package)]},
        )
        assert _wait_terminal(hook, job_id) == "SUCCEEDED", hook.get_job_logs(job_id)[-2000:]
        assert "shipped-42" in hook.get_job_logs(job_id)
    finally:
        stop_local_head(head)
