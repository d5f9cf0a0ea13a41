"""The repair rule (manual clear vs retry) and RayOrchOperator's whole-run repair."""

from __future__ import annotations

import contextlib
import io
import os
import shlex
from types import SimpleNamespace
from typing import TYPE_CHECKING
from unittest import mock

import pytest

from airflow_provider_rayorch.common.repair import (
    RepairMode,
    is_first_try_after_clear,
    should_repair,
)
from airflow_provider_rayorch.exceptions import RayOrchFailedRatioExceeded
from airflow_provider_rayorch.hooks.settings import RayOrchSettings
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator
from airflow_provider_rayorch.runs import driver

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("try_number", "max_tries", "retries", "expected"),
    [
        pytest.param(1, 2, 2, False, id="first try of a run"),
        pytest.param(2, 2, 2, False, id="automatic retry 1"),
        pytest.param(3, 2, 2, False, id="automatic retry 2"),
        pytest.param(4, 5, 2, True, id="first try after a clear at try 3"),
        pytest.param(5, 5, 2, False, id="retry after that clear"),
        pytest.param(2, 1, 0, True, id="clear of a task without retries"),
        pytest.param(3, 2, 0, True, id="second clear without retries"),
    ],
)
def test_first_try_after_clear(try_number: int, max_tries: int, retries: int, expected: bool):
    ti = SimpleNamespace(try_number=try_number, max_tries=max_tries)
    assert is_first_try_after_clear(ti, retries) is expected
    assert should_repair(RepairMode.ON_CLEAR, ti, retries) is expected
    assert should_repair(RepairMode.ALWAYS, ti, retries) is True
    assert should_repair(RepairMode.NEVER, ti, retries) is False


def test_without_integer_try_numbers_a_clear_cannot_be_told() -> None:
    assert is_first_try_after_clear(mock.MagicMock(), 0) is False


@pytest.mark.parametrize(
    ("value", "mode"),
    [("on_clear", "on_clear"), ("always", "always"), (False, "never"), (True, "on_clear")],
)
def test_repair_mode_spellings(value: object, mode: str) -> None:
    assert RepairMode.parse(value) == mode


def test_a_bad_repair_value_names_the_choices() -> None:
    with pytest.raises(ValueError, match="repair must be 'on_clear', 'always' or False"):
        RayOrchOperator(task_id="t", pipeline="a:B", sources=[], repair="sometimes")


# -- the operator's whole run ----------------------------------------------------------


class _Cluster:
    """A fake Jobs API whose submit runs the driver in-process."""

    def __init__(self, tmp_path: Path) -> None:
        self.hook = mock.MagicMock()
        self.hook.embedded = False
        self.hook.is_local_head = True
        self.hook.settings = RayOrchSettings(address="http://h:8265", run_store=str(tmp_path))
        self.hook.run_store_uri = str(tmp_path / "store")
        self.hook.runtime_env.side_effect = lambda override=None: dict(override or {})
        self.hook.find_active_job.return_value = None
        self.hook.get_job_logs.return_value = ""
        self.hook.dashboard_job_url.return_value = None
        self.hook.submit_job.side_effect = self.submit
        self.hook.get_job_info.side_effect = self.info
        self.hook.get_job_status.side_effect = lambda j: (
            self.hook.get_job_info(j) or {"status": "MISSING"}
        )["status"]
        self.hook.get_job_logs.side_effect = lambda j: self.logs.get(j, "")
        self.codes: dict[str, int] = {}
        self.logs: dict[str, str] = {}
        self.entrypoints: list[str] = []

    def submit(self, entrypoint: str, *, submission_id: str, **kw: object) -> str:
        self.entrypoints.append(entrypoint)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.codes[submission_id] = driver.main(shlex.split(entrypoint)[3:])
        self.logs[submission_id] = out.getvalue()
        return submission_id

    def info(self, job_id: str) -> dict[str, str] | None:
        if job_id not in self.codes:
            return None
        return {"status": "SUCCEEDED" if self.codes[job_id] == 0 else "FAILED", "message": ""}


def _ctx(try_number: int, max_tries: int) -> dict[str, object]:
    ti = mock.MagicMock(
        dag_id="dag", run_id="manual__1", task_id="task", map_index=-1, stats_tags={}
    )
    ti.try_number, ti.max_tries = try_number, max_tries
    return {"ti": ti, "task_state_store": None, "outlet_events": mock.MagicMock()}


def _op(cluster: _Cluster, state: Path, **kw: object) -> RayOrchOperator:
    op = RayOrchOperator(
        task_id="task",
        pipeline="repair_pipelines:Flaky",
        pipeline_kwargs={"state_dir": str(state)},
        sources=list(range(6)),
        input_batch_size=3,
        backend="local",
        poll_interval=0.01,
        **kw,
    )
    op.__dict__["hook"] = cluster.hook
    return op


def _calls(state: Path) -> list[int]:
    log = state / "calls.log"
    return sorted(int(x) for x in log.read_text().split()) if log.exists() else []


@pytest.fixture
def failed_run(tmp_path: Path) -> tuple[_Cluster, Path]:
    state = tmp_path / "state"
    state.mkdir()
    (state / "fail-1").touch()
    cluster = _Cluster(tmp_path)
    with pytest.raises(RayOrchFailedRatioExceeded):
        _op(cluster, state, retries=2).execute(_ctx(1, 2))
    os.remove(state / "fail-1")
    (state / "calls.log").unlink()
    return cluster, state


def test_the_first_try_after_a_clear_repairs_only_the_failed_sources(failed_run) -> None:
    cluster, state = failed_run
    summary = _op(cluster, state, retries=2).execute(_ctx(4, 5))  # cleared after try 3
    assert summary["state"] == "success"
    assert summary["sources"]["present"] == 6
    assert _calls(state) == [1, 1]  # source 1's two pages; nothing PRESENT re-ran
    assert "--repair all --write-run-manifest" in cluster.entrypoints[-1]


def test_an_automatic_retry_resumes_and_repairs_nothing(failed_run) -> None:
    cluster, state = failed_run
    with pytest.raises(RayOrchFailedRatioExceeded):
        _op(cluster, state, retries=2).execute(_ctx(2, 2))
    assert _calls(state) == []
    assert "--repair" not in cluster.entrypoints[-1]


def test_repair_false_never_repairs(failed_run) -> None:
    cluster, state = failed_run
    with pytest.raises(RayOrchFailedRatioExceeded):
        _op(cluster, state, retries=2, repair=False).execute(_ctx(4, 5))
    assert _calls(state) == []


def test_repair_always_repairs_on_a_retry_too(failed_run) -> None:
    cluster, state = failed_run
    summary = _op(cluster, state, retries=2, repair="always").execute(_ctx(2, 2))
    assert summary["state"] == "success"
    assert _calls(state) == [1, 1]


def test_an_embedded_run_repairs_in_its_driver_process(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "fail-1").touch()
    cluster = _Cluster(tmp_path)
    cluster.hook.embedded = True
    cluster.hook.settings = RayOrchSettings(address=None, run_store=str(tmp_path / "store"))
    with pytest.raises(RayOrchFailedRatioExceeded):
        _op(cluster, state).execute(_ctx(1, 0))
    os.remove(state / "fail-1")
    (state / "calls.log").unlink()
    summary = _op(cluster, state).execute(_ctx(2, 1))  # cleared, retries=0
    assert summary["state"] == "success"
    assert _calls(state) == [1, 1]
    assert cluster.entrypoints == []  # no job was submitted: the driver ran here
