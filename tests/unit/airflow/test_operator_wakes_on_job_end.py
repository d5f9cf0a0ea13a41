"""The operator's wait wakes on its job's run events, not at its next poll.

Measured on a loopback deployment (``python -m benchmarks.airflow_path``): the
operator's task ended a median 4.0 s after its Ray job: the rest of the 5 s poll
interval slept after the job's last look, then the wait for Ray to close the job's
log stream (2 to 5 s after the job ended). The operator already streams the job's
log, where the driver prints a run event for each commit and for the run's end:
an event now ends the wait, after the end event the job's status is read every
``END_POLL_S`` (the driver's process is exiting) for at most one poll interval, and
the stream's close is not waited for (the driver prints nothing after its end). A
stream that failed leaves the plain poll interval, so the loop never spins. The
clock is a fake one: the tests assert what the wait waited on, never how long.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from repair_plans import write_finished_run

pytestmark = pytest.mark.timeout(60)
POLL_S = 5.0
COMMIT = 'RAYORCH_EVENT {"event": "microbatch", "index": 0}\n'
END = 'RAYORCH_EVENT {"event": "end", "run_id": "run"}\n'


class _Clock:
    """``time`` for the wait: ``sleep`` only moves ``monotonic`` on."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class _Stream:
    """The operator's log follower: each wait brings the next chunk one second later
    (Ray's log tail reads once a second), or the stream failed from the start."""

    def __init__(self, clock: _Clock, chunks: list[str], failed: Exception | None = None):
        self.clock, self.chunks, self.failed = clock, list(chunks), failed
        self.waits: list[float] = []
        self.closes: list[float] = []
        self._ready = ""

    def start(self) -> _Stream:
        return self

    @property
    def ended(self) -> bool:
        return False

    def wait_activity(self, timeout: float) -> bool:
        self.waits.append(timeout)
        if not self.chunks:
            self.clock.now += timeout
            return False
        self.clock.now += 1.0
        self._ready += self.chunks.pop(0)
        return True

    def drain(self) -> str:
        out, self._ready = self._ready, ""
        return out

    def wait_closed(self, timeout: float) -> bool:
        self.closes.append(timeout)
        self.clock.now += 3.0  # Ray closes a stream seconds after its job ended
        return True

    def stop(self) -> None:
        pass


def _poll(
    tmp_path: Any, clock: _Clock, stream: _Stream, statuses: list[str], whole_log: str = ""
) -> list[float]:
    """Wait for a job whose successive reads give ``statuses``; returns when (on the
    fake clock) each read happened."""
    from airflow_provider_rayorch.hooks.settings import RayOrchSettings
    from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

    write_finished_run(tmp_path)
    hook = mock.MagicMock(embedded=False, run_store_uri=str(tmp_path), is_local_head=False)
    hook.settings = RayOrchSettings(address="http://h:8265", run_store=str(tmp_path))
    hook.get_job_logs.return_value = whole_log
    reads: list[float] = []

    def read(_job: str) -> dict[str, str]:
        reads.append(clock.now)
        return {"status": statuses.pop(0) if len(statuses) > 1 else statuses[0], "message": ""}

    hook.get_job_info.side_effect = read
    op = RayOrchOperator(
        task_id="t", pipeline="fake_pipelines:Square", sources=[1, 2], poll_interval=POLL_S
    )
    op.__dict__["hook"] = hook
    ti = mock.MagicMock(dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    with (
        mock.patch.object(type(op), "_run_id", return_value="run"),
        mock.patch("airflow_provider_rayorch.operators._job_wait.LogFollower", return_value=stream),
        mock.patch("airflow_provider_rayorch.operators._job_wait.time", clock),
    ):
        op._poll("j", {"ti": ti})
    return reads


def test_a_commit_and_the_run_end_wake_the_wait(tmp_path, fake_engine) -> None:
    from airflow_provider_rayorch.common.polling import END_POLL_S

    clock = _Clock()
    stream = _Stream(clock, ["driver starting\n", COMMIT, END])
    # RUNNING until the driver's process has exited, two reads after its end event
    reads = _poll(tmp_path, clock, stream, ["RUNNING"] * 4 + ["SUCCEEDED"])
    # a plain log line does not end the wait; the commit (t=2) and the end (t=3) do
    assert reads[:3] == [0.0, 2.0, 3.0]
    # then the status is read every END_POLL_S, never a whole poll interval later
    assert clock.slept == [END_POLL_S, END_POLL_S]
    assert reads[3:] == [3.0 + END_POLL_S, 3.0 + 2 * END_POLL_S]
    # and the task does not wait for Ray to close the stream: the driver's log is complete
    assert stream.closes == []
    assert clock.now == 3.0 + 2 * END_POLL_S


def test_a_run_that_succeeded_before_its_end_event_came_reads_the_rest_by_offset(
    tmp_path, fake_engine
) -> None:
    """Ray reports SUCCEEDED a second or two before its log stream brings the
    driver's last lines, and closes the stream seconds later."""
    clock = _Clock()
    stream = _Stream(clock, [COMMIT])
    _poll(tmp_path, clock, stream, ["RUNNING", "SUCCEEDED"], whole_log=COMMIT + END)
    assert stream.closes == []
    assert clock.now == 1.0  # woken by the commit, which found the job ended


def test_a_failed_job_without_the_end_event_is_read_to_the_streams_close(
    tmp_path, fake_engine
) -> None:
    from airflow_provider_rayorch.exceptions import RayOrchJobFailed

    clock = _Clock()
    stream = _Stream(clock, [COMMIT])
    with pytest.raises(RayOrchJobFailed):
        _poll(tmp_path, clock, stream, ["RUNNING", "FAILED"])
    assert len(stream.closes) == 1  # its last lines (the driver's error line) are relayed


def test_fast_reads_after_the_end_event_last_one_poll_interval(tmp_path, fake_engine) -> None:
    from airflow_provider_rayorch.common.polling import END_POLL_S

    clock = _Clock()
    stream = _Stream(clock, [END])
    fast = int(POLL_S / END_POLL_S)
    reads = _poll(tmp_path, clock, stream, ["RUNNING"] * (fast + 3) + ["SUCCEEDED"])
    assert clock.slept[:fast] == [END_POLL_S] * fast
    assert POLL_S not in clock.slept[:fast]
    # a driver that said it ended but whose job goes on: back to the stream and the interval
    assert stream.waits[-1] == POLL_S
    assert reads[-1] - reads[-2] == POLL_S


def test_without_a_stream_the_wait_is_the_poll_interval(tmp_path, fake_engine) -> None:
    clock = _Clock()
    stream = _Stream(clock, [COMMIT], failed=ConnectionError("no websocket"))
    reads = _poll(tmp_path, clock, stream, ["RUNNING", "RUNNING", "SUCCEEDED"])
    assert clock.slept == [POLL_S, POLL_S]
    assert reads == [0.0, POLL_S, 2 * POLL_S]
    assert stream.waits == []  # a failed stream is never waited on: no busy loop
