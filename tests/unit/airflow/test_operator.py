from __future__ import annotations

from unittest import mock

import pytest
from airflow.sdk.exceptions import TaskDeferred

from airflow_provider_rayorch.common.polling import RetryPolicy
from airflow_provider_rayorch.exceptions import (
    RayOrchClusterError,
    RayOrchClusterUnavailable,
    RayOrchCompileFailed,
    RayOrchFailedRatioExceeded,
    RayOrchJobFailed,
    RayOrchPipelineNotImportable,
    RayOrchPlanChanged,
)
from airflow_provider_rayorch.hooks.settings import RayOrchSettings
from airflow_provider_rayorch.operators.microbatch import RayOrchSubmitOperator
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator
from airflow_provider_rayorch.runs import driver
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.triggers.rayorch import RayOrchJobTrigger

pytestmark = pytest.mark.timeout(60)


class StateStore(dict):
    def set(self, key, value, retention=None):
        self[key] = value


def _context(try_number: int = 1, map_index: int = -1, state: StateStore | None = None):
    ti = mock.MagicMock(
        dag_id="dag",
        run_id="manual__1",
        task_id="task",
        map_index=map_index,
        try_number=try_number,
        stats_tags={},
    )
    pushed = {}
    ti.xcom_push.side_effect = lambda key, value: pushed.__setitem__(key, value)
    ctx = {
        "ti": ti,
        "task_state_store": StateStore() if state is None else state,
        "outlet_events": mock.MagicMock(),
    }
    return ctx, pushed


def _hook(tmp_path, *, embedded: bool = False):
    hook = mock.MagicMock()
    hook.embedded = embedded
    hook.settings = RayOrchSettings(
        address=None if embedded else "http://h:8265", run_store=str(tmp_path)
    )
    hook.run_store_uri = str(tmp_path)
    hook.runtime_env.side_effect = lambda override=None: dict(override or {})
    hook.find_active_job.return_value = None
    hook.get_job_info.return_value = None
    hook.get_job_logs.return_value = ""
    hook.dashboard_job_url.side_effect = lambda j: f"http://h:8265/#/jobs/{j}"
    return hook


def _op(tmp_path, hook, cls=RayOrchOperator, **kw):
    kw.setdefault("pipeline", "fake_pipelines:Square")
    kw.setdefault("sources", list(range(5)))
    op = cls(task_id="task", input_batch_size=2, poll_interval=0.01, **kw)
    op.__dict__["hook"] = hook
    return op


def _cluster_runs_driver(tmp_path, hook, statuses=("RUNNING", "SUCCEEDED")):
    """submit_job runs the driver in-process (the 'cluster'); statuses follow."""
    submitted: set[str] = set()

    def submit(entrypoint, *, submission_id, **kw):
        run_id = entrypoint.split("--run-id ")[1].strip("'")
        driver.run_plan(RunStore(str(tmp_path)), run_id)
        submitted.add(submission_id)
        return submission_id

    hook.submit_job.side_effect = submit
    it = iter(statuses)
    last = {"s": None}

    def info(job_id):
        if job_id not in submitted:
            return None
        last["s"] = next(it, last["s"])
        return {"status": last["s"], "message": "m"}

    hook.get_job_info.side_effect = info
    hook.get_job_status.side_effect = lambda j: (info(j) or {"status": "MISSING"})["status"]


def test_compile_error_fails_before_anything_is_submitted(tmp_path, fake_engine) -> None:
    hook = _hook(tmp_path)
    op = _op(tmp_path, hook, pipeline="fake_pipelines:Broken")
    ctx, _ = _context()
    with pytest.raises(RayOrchCompileFailed, match="mixes Domains"):
        op.execute(ctx)
    hook.submit_job.assert_not_called()
    assert list(tmp_path.iterdir()) == []


def test_unimportable_pipeline(tmp_path, fake_engine) -> None:
    op = _op(tmp_path, _hook(tmp_path), pipeline="nowhere_module:Pipe")
    with pytest.raises(RayOrchPipelineNotImportable, match="py_modules"):
        op.execute(_context()[0])


def test_pipeline_defined_in_dag_file_is_refused(tmp_path, fake_engine, monkeypatch) -> None:
    import sys
    import types

    module = types.ModuleType("unusual_prefix_abc_my_dag")
    module.Pipe = type("Pipe", (), {"__module__": module.__name__})
    monkeypatch.setitem(sys.modules, module.__name__, module)
    op = _op(tmp_path, _hook(tmp_path), pipeline=module.Pipe)
    with pytest.raises(RayOrchPipelineNotImportable, match="working_dir"):
        op.execute(_context()[0])


def test_sync_run_submits_once_and_returns_summary(tmp_path, fake_engine) -> None:
    hook = _hook(tmp_path)
    _cluster_runs_driver(tmp_path, hook)
    op = _op(tmp_path, hook)
    ctx, pushed = _context()
    summary = op.execute(ctx)
    assert summary["state"] == "success"
    assert summary["sources"]["present"] == 5
    assert hook.submit_job.call_count == 1
    job_id = hook.submit_job.call_args.kwargs["submission_id"]
    assert ctx["task_state_store"]["rayorch_job_id"] == job_id
    assert pushed["rayorch_job_id"] == job_id
    assert pushed["rayorch_job_url"].endswith(job_id)
    meta = hook.submit_job.call_args.kwargs["metadata"]
    assert meta["rayorch_run_id"] == pushed["rayorch_run_id"]


def test_retry_reattaches_to_running_job(tmp_path, fake_engine) -> None:
    hook = _hook(tmp_path)
    _cluster_runs_driver(tmp_path, hook)
    op = _op(tmp_path, hook)
    ctx, _ = _context()
    op.execute(ctx)
    hook.submit_job.reset_mock()
    statuses = iter(["RUNNING", "RUNNING", "SUCCEEDED"])
    hook.get_job_status.side_effect = lambda j: next(statuses)
    hook.get_job_info.side_effect = lambda j: {"status": next(statuses, "SUCCEEDED"), "message": ""}
    retry_ctx, _ = _context(try_number=2, state=ctx["task_state_store"])
    assert op.execute(retry_ctx)["state"] == "success"
    hook.submit_job.assert_not_called()


def test_retry_after_failed_job_submits_new_job_for_same_run(tmp_path, fake_engine) -> None:
    hook = _hook(tmp_path)
    store = StateStore(rayorch_job_id="old-job")
    hook.get_job_status.side_effect = lambda j: "FAILED"
    _cluster_runs_driver(tmp_path, hook, statuses=("SUCCEEDED",))
    hook.get_job_status.side_effect = lambda j: "FAILED" if j == "old-job" else "SUCCEEDED"
    op = _op(tmp_path, hook)
    ctx, _pushed = _context(try_number=2, state=store)
    assert op.execute(ctx)["state"] == "success"
    sid = hook.submit_job.call_args.kwargs["submission_id"]
    assert sid.endswith("-try2")
    assert store["rayorch_job_id"] == sid


def test_active_job_found_on_cluster_is_not_duplicated(tmp_path, fake_engine) -> None:
    hook = _hook(tmp_path)
    hook.find_active_job.return_value = "running-job"
    hook.get_job_info.side_effect = None
    hook.get_job_info.return_value = {"status": "FAILED", "message": "x"}
    op = _op(tmp_path, hook)
    with pytest.raises(RayOrchJobFailed, match="running-job ended FAILED"):
        op.execute(_context(state=StateStore())[0])
    hook.submit_job.assert_not_called()


def test_failed_ratio_fails_task_with_summary_in_xcom(tmp_path, fake_engine) -> None:
    hook = _hook(tmp_path)
    _cluster_runs_driver(tmp_path, hook)
    op = _op(tmp_path, hook, pipeline_kwargs={"poison": [3]}, max_failed_ratio=0.1)
    ctx, pushed = _context()
    with pytest.raises(RayOrchFailedRatioExceeded, match="source 3: doc\\[3\\]: poisoned"):
        op.execute(ctx)
    assert pushed["rayorch_summary"]["sources"]["failed"] == 1


def test_within_ratio_succeeds(tmp_path, fake_engine) -> None:
    hook = _hook(tmp_path)
    _cluster_runs_driver(tmp_path, hook)
    op = _op(tmp_path, hook, pipeline_kwargs={"poison": [3]}, max_failed_ratio=0.5)
    summary = op.execute(_context()[0])
    assert summary["state"] == "success"
    assert summary["failures"][0]["source"] == 3


def test_deferrable_defers_then_completes(tmp_path, fake_engine) -> None:
    hook = _hook(tmp_path)
    _cluster_runs_driver(tmp_path, hook)
    op = _op(tmp_path, hook, deferrable=True)
    ctx, _ = _context()
    with pytest.raises(TaskDeferred) as deferred:
        op.execute(ctx)
    trigger = deferred.value.trigger
    assert isinstance(trigger, RayOrchJobTrigger)
    assert trigger.job_id == ctx["task_state_store"]["rayorch_job_id"]
    event = {
        "status": "success",
        "job_id": trigger.job_id,
        "run_id": trigger.run_id,
        "job_status": "SUCCEEDED",
        "message": "",
    }
    assert op.execute_complete(ctx, event)["state"] == "success"
    with pytest.raises(RayOrchJobFailed, match="ended FAILED"):
        op.execute_complete(ctx, {**event, "status": "error", "job_status": "FAILED"})


def test_driver_error_in_job_logs_is_surfaced(tmp_path, fake_engine) -> None:
    hook = _hook(tmp_path)
    hook.submit_job.return_value = "j"
    hook.get_job_info.side_effect = lambda j: {"status": "FAILED", "message": "exit 4"}
    hook.get_job_status.side_effect = lambda j: "FAILED"
    hook.get_job_logs.return_value = 'RAYORCH_ERROR {"exit_code": 4, "message": "cannot import"}'
    op = _op(tmp_path, hook)
    with pytest.raises(RayOrchPipelineNotImportable, match="cannot import"):
        op.execute(_context()[0])


def test_changed_plan_is_refused_or_replaced(tmp_path, fake_engine) -> None:
    hook = _hook(tmp_path)
    _cluster_runs_driver(tmp_path, hook)
    _op(tmp_path, hook).execute(_context()[0])
    _cluster_runs_driver(tmp_path, hook)
    changed = _op(tmp_path, hook, sources=list(range(6)))
    with pytest.raises(RayOrchPlanChanged, match="never mixed"):
        changed.execute(_context(try_number=2)[0])
    replacing = _op(tmp_path, hook, sources=list(range(6)), on_plan_change="replace")
    summary = replacing.execute(_context(try_number=3)[0])
    assert summary["sources"]["total"] == 6


def test_on_kill_stops_job(tmp_path) -> None:
    hook = _hook(tmp_path)
    op = _op(tmp_path, hook)
    op._job_id = "j7"
    op.on_kill()
    hook.stop_job.assert_called_once_with("j7")


def test_submit_operator_returns_descriptors(tmp_path, fake_engine) -> None:
    hook = _hook(tmp_path)
    hook.submit_job.return_value = "job-x"
    op = _op(tmp_path, hook, cls=RayOrchSubmitOperator)
    ctx, pushed = _context()
    assert op.execute(ctx) == [
        {"index": 0, "first_source": 0, "count": 2},
        {"index": 1, "first_source": 2, "count": 2},
        {"index": 2, "first_source": 4, "count": 1},
    ]
    assert pushed["rayorch_job_id"] == "job-x"
    assert ctx["task_state_store"]["rayorch_job_id"] == "job-x"
    hook.get_job_status.return_value = "RUNNING"
    hook.submit_job.reset_mock()
    op.execute(_context(try_number=2, state=ctx["task_state_store"])[0])
    hook.submit_job.assert_not_called()


def test_submit_operator_needs_a_cluster(tmp_path, fake_engine) -> None:
    op = _op(tmp_path, _hook(tmp_path, embedded=True), cls=RayOrchSubmitOperator)
    with pytest.raises(RayOrchClusterError, match="cluster address"):
        op.execute(_context()[0])


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"max_failed_ratio": 1.5}, id="ratio"),
        pytest.param({"backend": "spark"}, id="backend"),
        pytest.param({"on_plan_change": "merge"}, id="plan-change"),
    ],
)
def test_operator_validates_arguments(kwargs) -> None:
    with pytest.raises(ValueError, match="must be"):
        RayOrchOperator(task_id="t", pipeline="m:F", sources=[], **kwargs)


def test_asset_alias_outlet(tmp_path, fake_engine) -> None:
    from airflow.sdk import AssetAlias

    hook = _hook(tmp_path)
    _cluster_runs_driver(tmp_path, hook)
    op = _op(tmp_path, hook, outputs_asset_alias="rayorch-outputs")
    assert AssetAlias("rayorch-outputs") in op.outlets
    ctx, _ = _context()
    op.execute(ctx)
    events = ctx["outlet_events"].__getitem__.return_value
    asset = events.add.call_args.args[0]
    assert asset.uri.startswith("file://")


def test_on_kill_stops_embedded_driver_process_group(tmp_path) -> None:
    import subprocess
    import sys
    import time

    op = _op(tmp_path, _hook(tmp_path, embedded=True))
    op._proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    op.on_kill()
    deadline = time.monotonic() + 10
    while op._proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert op._proc.poll() is not None


def test_openlineage_is_optional(tmp_path) -> None:
    import importlib.util

    op = _op(tmp_path, _hook(tmp_path))
    facets = op.get_openlineage_facets_on_complete(None)
    if importlib.util.find_spec("airflow.providers.openlineage") is None:
        assert facets is None
    else:  # no task instance, no run to name (tests/unit/lineage: what a run reports)
        assert facets.outputs == []


def test_embedded_driver_dies_with_its_task_process(tmp_path) -> None:
    """A driver orphaned by a dead worker must not race the retry's driver."""
    import os
    import subprocess
    import sys
    import time

    script = (
        "import subprocess, sys, time\n"
        "from airflow_provider_rayorch.operators._embedded import _die_with_parent_fn\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],\n"
        "                         start_new_session=True, preexec_fn=_die_with_parent_fn())\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    child_pid = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child_pid, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{child_pid}/stat") as f:
            if f.read().split()[2] == "Z":
                break
        time.sleep(0.05)
    else:
        raise AssertionError("the driver outlived its task process")


def test_the_operators_hook_retries_paced_by_its_poll_interval() -> None:
    op = RayOrchOperator(task_id="t", pipeline="m:f", sources=[1], poll_interval=3.0)
    assert op.hook.retry == RetryPolicy(base_s=3.0)


def test_sync_poll_gives_up_after_repeated_cluster_errors(tmp_path, fake_engine) -> None:
    hook = _hook(tmp_path)
    _cluster_runs_driver(tmp_path, hook)
    real_info = hook.get_job_info.side_effect
    calls = {"n": 0}

    def down(job_id):
        calls["n"] += 1
        if calls["n"] >= 3:
            raise RayOrchClusterUnavailable("cannot reach")
        return real_info(job_id)

    hook.get_job_info.side_effect = down
    with pytest.raises(RayOrchClusterError, match="cannot reach"):
        _op(tmp_path, hook).execute(_context()[0])
