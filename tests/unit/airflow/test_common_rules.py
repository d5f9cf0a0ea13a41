"""The shared Airflow rules: the retry budget, the failed-ratio verdict, the loopback
head registry (airflow_provider_rayorch.common)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from airflow_provider_rayorch.common import local_heads
from airflow_provider_rayorch.common.polling import RETRY_POLICY, RetryPolicy
from airflow_provider_rayorch.common.ratio import judge_summary
from airflow_provider_rayorch.common.states import JobStatus

pytestmark = pytest.mark.timeout(30)


def test_the_budget_is_bounded() -> None:
    assert RETRY_POLICY.retries == 5
    paced = RetryPolicy(base_s=5.0)
    assert paced.delay(10) == paced.max_delay_s
    assert paced.describe() == "5 retries waiting 5, 10, 20, 40, 60 s"


def test_failed_ratio_verdict() -> None:
    summary = {
        "state": "success",
        "sources": {"total": 4, "present": 3, "dropped": 0, "failed": 1, "suppressed": 0},
        "failures": [{"source": 2, "outcome": "failed", "cause": "doc[2]: bad"}],
    }
    assert judge_summary(summary, 0.25).ok
    verdict = judge_summary(summary, 0.2)
    assert verdict.summary["state"] == "failed"
    assert verdict.message is not None
    assert "source 2: doc[2]: bad" in verdict.message
    assert summary["state"] == "success"  # the input is not mutated


def test_job_status_parse() -> None:
    assert JobStatus.parse("running").is_active
    assert JobStatus.MISSING.is_terminal
    assert JobStatus.parse(JobStatus.NOT_STARTED) is JobStatus.NOT_STARTED


@pytest.fixture
def registry(tmp_path, monkeypatch):
    root = tmp_path / "heads"
    monkeypatch.setenv("RAYORCH_LOCAL_HEADS_DIR", str(root))
    return root


def test_registered_live_head_is_found_and_stale_one_is_not(registry, tmp_path) -> None:
    token = tmp_path / "auth_token"
    token.write_text("t0k3n\n")
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    try:
        local_heads.register("http://127.0.0.1:8999", str(token), proc.pid)
        assert (registry.stat().st_mode & 0o777) == 0o700
        head = local_heads.lookup("http://localhost:8999/")
        assert head is not None
        assert local_heads.read_token(head) == "t0k3n"
        assert local_heads.lookup("http://10.0.0.1:8999") is None  # not loopback
        assert local_heads.lookup("http://127.0.0.1:9000") is None  # not registered
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
    assert local_heads.lookup("http://127.0.0.1:8999") is None  # its process group is gone
    local_heads.unregister("http://127.0.0.1:8999")
    assert not (registry / "8999").exists()


def test_head_token_wins_over_the_connection_token_and_is_masked(
    registry, tmp_path, monkeypatch
) -> None:
    import json

    from airflow_provider_rayorch.hooks.rayorch import RayOrchHook

    token = tmp_path / "auth_token"
    token.write_text("head-token-value")
    local_heads.register("http://127.0.0.1:8998", str(token), os.getpgrp())
    monkeypatch.setenv(
        "AIRFLOW_CONN_RAYORCH_DEFAULT",
        json.dumps({"conn_type": "rayorch", "host": "http://h:1", "password": "conn-token"}),
    )
    masked: list[str] = []
    monkeypatch.setattr("airflow.sdk.log.mask_secret", lambda s, *a, **k: masked.append(s))
    hook = RayOrchHook(address="http://127.0.0.1:8998")
    assert hook.is_local_head
    assert hook.api.headers() == {"Authorization": "Bearer head-token-value"}
    assert hook.api.token.describe() == (
        f"the token of the provider's loopback head (token file {token})"
    )
    assert masked == ["head-token-value"]
    other = RayOrchHook()
    assert other.api.headers() == {"Authorization": "Bearer conn-token"}
    assert not other.is_local_head
