"""Ray's log stream (``/api/jobs/<id>/logs/tail``, a websocket) on a real loopback
head in token mode: the relay gets the whole log, each byte once, and Ray closes
the stream after the job ended."""

from __future__ import annotations

import secrets
import sys
import time
from unittest import mock

import pytest

from airflow_provider_rayorch.common.log_relay import LineRelay, LogFollower
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.operators.local_head import (
    RayLocalHeadStartOperator,
    RayLocalHeadStopOperator,
)

JOB = (
    "import time\nfor i in range(30):\n    print(f'line {i:03d}', flush=True)\n    time.sleep(0.1)"
)


@pytest.mark.timeout(240)
def test_the_log_stream_of_a_token_mode_head(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    script = tmp_path / "job.py"
    script.write_text(JOB)
    head = RayLocalHeadStartOperator(task_id="ray_head", num_cpus=1).execute({})
    try:
        hook = RayOrchHook(address=head["address"], answered_before=True)
        assert hook.api.headers(), "a loopback head runs in token mode"
        job_id = hook.submit_job(
            f"{sys.executable} {script}", submission_id=f"t-{secrets.token_hex(4)}"
        )
        follower = LogFollower(lambda: hook.api, job_id).start()
        relay = LineRelay(mock.MagicMock(), "[ray job]")  # relay.tail keeps the lines
        deadline = time.monotonic() + 120
        while str(hook.get_job_status(job_id)) in ("PENDING", "RUNNING"):
            assert time.monotonic() < deadline, "the job did not end"
            relay.feed(follower.drain())
            time.sleep(0.2)
        assert follower.wait_closed(30), f"Ray did not close the stream: {follower.failed}"
        relay.feed(follower.drain())
        relay.flush()
        assert follower.failed is None
        assert [line for line in relay.tail if line.startswith("line ")] == [
            f"line {i:03d}" for i in range(30)
        ]
        assert follower.received == len(hook.get_job_logs(job_id))  # each character once
    finally:
        RayLocalHeadStopOperator(task_id="stop_ray_head", head=head).execute({})
