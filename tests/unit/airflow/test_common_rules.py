"""The shared Airflow rules: the retry budget, the failed-ratio verdict, the loopback
head registry (airflow_provider_rayorch.common)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from airflow_provider_rayorch.common import local_heads
from airflow_provider_rayorch.common.polling import (
    RETRY_BUDGET,
    RetryBudget,
    acall_with_retries,
    call_with_retries,
)
from airflow_provider_rayorch.common.ratio import judge_summary
from airflow_provider_rayorch.common.states import JobStatus
from airflow_provider_rayorch.exceptions import (
    RayOrchAuthError,
    RayOrchClusterError,
    RayOrchClusterUnavailable,
)

pytestmark = pytest.mark.timeout(30)


def _flaky(errors: list[Exception], result: str = "ok"):
    calls = {"n": 0}

    def fn():
        calls["n"] += 1
        if errors:
            raise errors.pop(0)
        return result

    return fn, calls


def test_transient_errors_are_retried_with_backoff_within_the_budget() -> None:
    waits: list[float] = []
    fn, calls = _flaky([RayOrchClusterUnavailable("HTTP 503")] * 3)
    assert call_with_retries(fn, what="x", interval=1.0, sleep=waits.append) == "ok"
    assert calls["n"] == 4
    assert waits == [1.0, 2.0, 4.0]


def test_the_budget_runs_out_with_a_clear_error() -> None:
    budget = RetryBudget(retries=2)
    fn, calls = _flaky([RayOrchClusterUnavailable("connection refused")] * 5)
    with pytest.raises(RayOrchClusterError, match=r"gave up after 3 tries.*connection refused"):
        call_with_retries(fn, what="reading job j", interval=0.0, budget=budget, sleep=lambda s: 0)
    assert calls["n"] == 3


@pytest.mark.parametrize(
    "error",
    [RayOrchAuthError("HTTP 401"), RayOrchClusterError("HTTP 404")],
    ids=["auth", "not-found"],
)
def test_permanent_errors_are_never_retried(error) -> None:
    fn, calls = _flaky([error])
    with pytest.raises(type(error)):
        call_with_retries(fn, what="x", interval=0.0, sleep=lambda s: 0)
    assert calls["n"] == 1


def test_async_retries_share_the_rule() -> None:
    errors = [RayOrchClusterUnavailable("timeout")]

    async def fn():
        if errors:
            raise errors.pop(0)
        return 7

    assert asyncio.run(acall_with_retries(fn, what="x", interval=0.0)) == 7


def test_the_budget_is_bounded() -> None:
    assert RETRY_BUDGET.retries == 5
    assert RETRY_BUDGET.delay(10, 5.0) == RETRY_BUDGET.max_delay_s
    assert RETRY_BUDGET.describe(5.0) == "5 retries waiting 5, 10, 20, 40, 60 s"


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
