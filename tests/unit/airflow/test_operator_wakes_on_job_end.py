"""The operator's wait wakes when its Ray job ends, not at its next poll (issue 21).

Measured on a loopback deployment (``python -m benchmarks.airflow_path``): the
operator's task ended a median 3.2 s after its Ray job, most of it the rest of the
5 s poll interval slept after the job's last look. Ray closes a job's log stream
once the job ended and its log was read to the end, and the operator already
follows that stream: the wait between two looks now ends when the stream closes.
A stream that failed (an old Ray, a proxy) leaves the plain poll interval, so the
loop never spins.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

from airflow_provider_rayorch.runs import driver
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

pytestmark = pytest.mark.timeout(60)
POLL_S = 5.0


class _Stream:
    """The operator's log follower: Ray closes the stream while the wait waits (the
    job ended then), or the stream failed from the start."""

    def __init__(self, *, failed: BaseException | None = None) -> None:
        self.failed = failed
        self.closed = False
        self.waits: list[float] = []

    def start(self) -> _Stream:
        return self

    @property
    def ended(self) -> bool:
        return self.closed and self.failed is None

    def drain(self) -> str:
        return ""

    def wait_closed(self, timeout: float) -> bool:
        self.waits.append(timeout)
        self.closed = True
        return True

    def stop(self) -> None:
        pass


def _finished_run(tmp_path: Any) -> None:
    store = RunStore(str(tmp_path))
    spec = "fake_pipelines:Square"
    fingerprint = driver.import_factory(spec)().compile().fingerprint
    store.write_plan(
        PlanRecord(run_id="run", pipeline=spec, fingerprint=fingerprint, sources=[1, 2])
    )
    driver.run_plan(store, "run")


def _poll(tmp_path: Any, stream: _Stream, sleep: mock.Mock) -> Any:
    from airflow_provider_rayorch.hooks.rayorch import RayOrchSettings
    from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

    hook = mock.MagicMock(embedded=False, run_store_uri=str(tmp_path), is_local_head=False)
    hook.settings = RayOrchSettings(address="http://h:8265", run_store=str(tmp_path))
    hook.get_job_logs.return_value = ""
    ended = {"status": "SUCCEEDED", "message": ""}
    hook.get_job_info.side_effect = lambda _job: ended if stream.closed else {"status": "RUNNING"}
    op = RayOrchOperator(
        task_id="t", pipeline="fake_pipelines:Square", sources=[1, 2], poll_interval=POLL_S
    )
    op.__dict__["hook"] = op.__dict__["poll_hook"] = hook
    ti = mock.MagicMock(dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    with (
        mock.patch.object(type(op), "_run_id", return_value="run"),
        mock.patch("airflow_provider_rayorch.operators._job_wait.LogFollower", return_value=stream),
        mock.patch("airflow_provider_rayorch.operators._job_wait.time.sleep", sleep),
    ):
        return op._poll("j", {"ti": ti})


def test_the_wait_ends_when_ray_closes_the_log_stream(tmp_path, fake_engine) -> None:
    _finished_run(tmp_path)
    stream = _Stream()
    slept = mock.Mock(side_effect=AssertionError("slept the whole poll interval"))
    seen = _poll(tmp_path, stream, slept)
    assert seen.succeeded
    assert stream.waits[0] == POLL_S  # the job's first look said RUNNING: waited on the stream
    slept.assert_not_called()


def test_without_a_stream_the_wait_is_the_poll_interval(tmp_path, fake_engine) -> None:
    _finished_run(tmp_path)
    stream = _Stream(failed=ConnectionError("no websocket"))
    calls: list[float] = []

    def sleep(seconds: float) -> None:
        calls.append(seconds)
        stream.closed = True  # the job ends during the poll interval

    seen = _poll(tmp_path, stream, mock.Mock(side_effect=sleep))
    assert seen.succeeded
    assert calls == [POLL_S]
    assert stream.waits == []  # a failed stream is never waited on: no busy loop
