"""The run task talks to the Jobs API through one hook: its submits and its polls.

A poll from a new process (a resumed try re-attaching to the job an earlier try
submitted) has never had an answer from this hook, yet the job's id says the Jobs
API answered its submit: a refused connection there is a dashboard restarting,
retried within the task's budget. The retry waits are injected: nothing sleeps."""

from __future__ import annotations

import socket

import pytest

from airflow_provider_rayorch.exceptions import RayOrchClusterError
from airflow_provider_rayorch.hooks import jobs_api
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

pytestmark = pytest.mark.timeout(60)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_resumed_poll_rides_out_a_refused_connection_on_the_tasks_one_hook(
    monkeypatch,
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    waits: list[float] = []
    monkeypatch.setattr(jobs_api, "sleep", waits.append)
    op = RayOrchOperator(
        task_id="t",
        pipeline="m:f",
        sources=[1],
        ray_address=f"http://127.0.0.1:{_closed_port()}",
        poll_interval=2.0,
    )
    with pytest.raises(RayOrchClusterError, match="gave up after 6 tries"):
        op.get_job_status("raysubmit_earlier", context={})
    assert waits == [2.0, 4.0, 8.0, 16.0, 32.0]
    assert op.hook.retry.base_s == 2.0
