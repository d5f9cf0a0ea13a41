"""A loopback head that cannot start fails with a permanent error: the provider's
request retries never take it for a busy cluster."""

from __future__ import annotations

import sys

import pytest

from airflow_provider_rayorch.common.polling import RETRY_POLICY
from airflow_provider_rayorch.exceptions import RayOrchClusterError, RayOrchTransientError
from airflow_provider_rayorch.operators import _head_start

pytestmark = pytest.mark.timeout(60)


def test_a_missing_ray_command_is_permanent_and_never_retried(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setattr(_head_start.shutil, "which", lambda name: None)
    with pytest.raises(RayOrchClusterError, match="`ray` command is not installed") as caught:
        _head_start._ray_executable()
    assert not isinstance(caught.value, RayOrchTransientError)
    assert caught.value.transient is False
    with pytest.raises(RayOrchClusterError) as again:  # the retry rule raises it at once
        RETRY_POLICY.attempts("starting a head").failed(caught.value)
    assert again.value is caught.value


class _NeverUp:
    """A ``ray start`` that runs on and never brings its head up."""

    pid = 2**22 + 12345  # no such process group: its raylet is never seen

    def poll(self) -> None:
        return None


def test_a_head_too_slow_to_start_says_what_its_ray_logs_say(tmp_path) -> None:
    logs = tmp_path / "session_latest" / "logs"
    logs.mkdir(parents=True)
    (logs / "dashboard_agent.log").write_text(
        "INFO agent starting\n"
        "ERROR Failed to bind the agent's HTTP server: [Errno 98] Address already in use\n"
        "ERROR Exception: header Bearer t0ken-never-shown refused\n"
    )
    (logs / "dashboard.log").write_text(  # every head after the first says this: no cause
        "ERROR Failed to start the metrics server on port 44217: Address already in use\n"
    )
    (logs / "raylet.out").write_text("[info] raylet started\n")
    token = tmp_path / "auth_token"
    token.write_text("t0ken-never-shown")
    with pytest.raises(RayOrchClusterError) as caught:
        _head_start._wait_until_up(
            _NeverUp(),  # type: ignore[arg-type]
            _head_start._Starting(),
            "http://127.0.0.1:9",
            9,
            9,
            str(token),
            0.2,
        )
    message = str(caught.value)
    assert "did not get its Jobs API up within 0.2s" in message
    assert "Its Ray logs say:" in message
    assert "dashboard_agent.log: ERROR Failed to bind" in message
    assert "raylet started" not in message  # only the lines that say why
    assert "metrics server" not in message
    assert "header Bearer *** refused" in message  # the head's token, masked
    assert "t0ken-never-shown" not in message
