"""A run that hangs past the task's ``execution_timeout`` says what bounds a hang.

Airflow's task runner runs ``execute`` under the task's ``execution_timeout`` and,
when it fires, calls ``on_kill`` before failing the task with a bare ``Timeout``. A
batch whose UDF never returns runs into that timeout unless its module has
``batch_timeout_s``: the task's log must say so, naming the modules without one.
"""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest

from airflow_provider_rayorch.hooks.settings import RayOrchSettings
from airflow_provider_rayorch.operators import _job_wait
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator


class _NoStream:
    """The job's log stream, failed from the start: the wait polls at its interval."""

    failed = RuntimeError("no stream in this test")
    ended = False

    def __init__(self, *_a: object) -> None:
        pass

    def start(self) -> _NoStream:
        return self

    def stop(self) -> None:
        pass

    def drain(self) -> str:
        return ""


def _hanging_operator(tmp_path, **kw) -> RayOrchOperator:
    """An operator whose Ray job runs forever (a batch that never returns)."""
    hook = mock.MagicMock(embedded=False, is_local_head=False, run_store_uri=str(tmp_path))
    hook.settings = RayOrchSettings(address="http://head:8265", run_store=str(tmp_path))
    hook.runtime_env.side_effect = lambda override=None: dict(override or {})
    hook.find_active_job.return_value = None
    hook.submit_job.side_effect = lambda entrypoint, *, submission_id, **_: submission_id
    hook.get_job_info.return_value = {"status": "RUNNING", "message": ""}
    hook.get_job_status.return_value = "RUNNING"
    hook.stop_job.return_value = True
    op = RayOrchOperator(
        task_id="t",
        pipeline="engine_pipelines:TwoOutputs",
        sources=[1, 2],
        poll_interval=0.05,
        execution_timeout=timedelta(seconds=3),
        **kw,
    )
    op.__dict__["hook"] = hook
    return op


def _context() -> dict:
    class StateStore(dict):
        def set(self, key, value, retention=None):
            self[key] = value

    ti = mock.MagicMock(dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    return {"ti": ti, "task_state_store": StateStore()}


def _run_as_the_task_runner(op: RayOrchOperator) -> list[str]:
    """``execute`` as Airflow's task runner runs it; the task's log lines."""
    from airflow.sdk.exceptions import AirflowTaskTimeout
    from airflow.sdk.execution_time.task_runner import _run_execute_callable
    from structlog.testing import capture_logs

    with capture_logs() as logs, pytest.raises(AirflowTaskTimeout):
        _run_execute_callable(_context(), op.execute, op)
    return [str(entry.get("event")) for entry in logs]


@pytest.mark.timeout(60, method="thread")  # Airflow's timeout takes SIGALRM
def test_a_hang_past_execution_timeout_names_batch_timeout_s(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(_job_wait, "LogFollower", _NoStream)
    _hanging_operator(tmp_path).prepare(_context())  # imports done: the timeout hits the wait
    op = _hanging_operator(tmp_path)
    lines = _run_as_the_task_runner(op)
    op.hook.stop_job.assert_called_once()
    hints = [line for line in lines if "execution_timeout" in line]
    assert hints, lines
    (hint,) = hints
    assert "batch_timeout_s" in hint
    assert "'divmod'" in hint  # the module that has none
    assert "docs/airflow/errors.md" in hint


@pytest.mark.timeout(60, method="thread")
def test_a_killed_task_without_a_timeout_gives_no_timeout_hint(tmp_path) -> None:
    """``on_kill`` also runs when the task is stopped from outside (marked failed)."""
    op = _hanging_operator(tmp_path)
    op._job_id, op._prepared_run_id = "j1", "r1"
    from structlog.testing import capture_logs

    with capture_logs() as logs:
        op.on_kill()
    assert not any("batch_timeout_s" in str(e.get("event")) for e in logs)
