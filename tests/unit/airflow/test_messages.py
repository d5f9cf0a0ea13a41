"""Error and log messages name what was wrong, where, and the fix."""

from __future__ import annotations

import socket
from unittest import mock

import pytest

from airflow_provider_rayorch.exceptions import (
    RayOrchClusterError,
    RayOrchJobFailed,
    RayOrchPipelineNotImportable,
)
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.sensors.rayorch import RayOrchRunSensor

pytestmark = pytest.mark.timeout(60)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ctx():
    ti = mock.MagicMock()
    ti.xcom_push.side_effect = lambda key, value: None
    return {"ti": ti}


def test_run_sensor_after_a_refused_submit_says_the_submit_failed(tmp_path) -> None:
    """Not `reading job 'None' failed: HTTP 401`."""
    store = RunStore(str(tmp_path))
    store.write_job_state(
        "r", "NOT_STARTED", "submit refused: HTTP 401: Unauthorized: Missing authentication token"
    )
    sensor = RayOrchRunSensor(
        task_id="run", run_id="r", run_store=str(tmp_path), job_id="None", deferrable=False
    )
    hook = mock.MagicMock()
    hook.get_job_status.side_effect = RayOrchClusterError(
        "reading job 'None' failed: HTTP 401: Unauthorized: Missing authentication token"
    )
    sensor.__dict__["hook"] = hook
    with pytest.raises(RayOrchJobFailed) as caught:
        sensor.poke(_ctx())
    message = str(caught.value)
    assert "'None'" not in message
    assert "submit" in message
    assert "never started" in message
    assert "HTTP 401" in message
    hook.get_job_status.assert_not_called()


def test_loopback_head_address_is_not_reported_as_embedded(monkeypatch) -> None:
    """A task given a head address must not log `using an embedded local Ray`."""
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    hook = RayOrchHook(address="http://127.0.0.1:8265")
    seen: list[str] = []
    monkeypatch.setattr(hook.log, "info", lambda msg, *a, **k: seen.append(msg % a))
    assert not hook.settings.embedded
    assert not any("embedded" in line for line in seen), seen
    assert any("http://127.0.0.1:8265" in line for line in seen), seen


@pytest.mark.parametrize("call", ["check_reachable", "get_job_info", "find_active_job"])
def test_refused_connection_names_the_host_and_the_fix(monkeypatch, call) -> None:
    """A refused connection is not a timeout, and the hint names the host (after the
    retries of a request about a job: nothing sleeps here)."""
    from airflow_provider_rayorch.hooks import jobs_api

    monkeypatch.setattr(jobs_api, "sleep", lambda delay: None)
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    address = f"http://127.0.0.1:{_closed_port()}"
    hook = RayOrchHook(address=address, timeout=10)
    with pytest.raises(RayOrchClusterError) as caught:
        getattr(hook, call)(*(["j"] if call != "check_reachable" else []))
    message = str(caught.value)
    assert "within 10s" not in message
    assert "refused" in message
    assert address in message
    assert "check the 'rayorch_default' connection's host" in message


def test_typo_in_pipeline_path_on_embedded_ray_does_not_suggest_runtime_env(
    tmp_path, fake_engine
) -> None:
    """On embedded Ray a typo is a typo, not a packaging problem."""
    from airflow_provider_rayorch.hooks.settings import RayOrchSettings
    from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

    hook = mock.MagicMock(embedded=True, run_store_uri=str(tmp_path))
    hook.settings = RayOrchSettings(address=None, run_store=str(tmp_path))
    hook.runtime_env.side_effect = lambda override=None: dict(override or {})
    op = RayOrchOperator(task_id="t", pipeline="fake_pipelinez:Square", sources=[1])
    op.__dict__["hook"] = hook
    ti = mock.MagicMock(dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    with pytest.raises(RayOrchPipelineNotImportable) as caught:
        op.execute({"ti": ti, "task_state_store": None})
    message = str(caught.value)
    assert "runtime_env" not in message
    assert "py_modules" not in message
    assert "'fake_pipelinez'" in message
    assert "spelling" in message
    assert "PYTHONPATH" in message


def test_loopback_head_gives_no_runtime_env_warning(tmp_path, fake_engine) -> None:
    """The provider's loopback head imports what the worker imports."""
    from structlog.testing import capture_logs

    from airflow_provider_rayorch.hooks.settings import RayOrchSettings
    from airflow_provider_rayorch.operators.microbatch import RayOrchSubmitOperator

    address = "http://127.0.0.1:8265"
    hook = mock.MagicMock(embedded=False, run_store_uri=str(tmp_path), is_local_head=True)
    hook.settings = RayOrchSettings(address=address, run_store=str(tmp_path))
    hook.runtime_env.side_effect = lambda override=None: dict(override or {})
    op = RayOrchSubmitOperator(
        task_id="submit", pipeline="fake_pipelines:Square", sources=[1, 2], ray_address=address
    )
    op.__dict__["hook"] = hook
    ti = mock.MagicMock(dag_id="d", run_id="r", task_id="submit", map_index=-1, try_number=1)
    with capture_logs() as logs:
        op.prepare({"ti": ti})
    events = [str(entry.get("event")) for entry in logs]
    assert not any("runtime_env" in e or "py_modules" in e for e in events), events


def _cluster_operator(tmp_path, pipeline: str, dag_file=None):
    """A submit operator on a remote cluster (no runtime_env), in a DAG at ``dag_file``."""
    from airflow.sdk import DAG

    from airflow_provider_rayorch.hooks.settings import RayOrchSettings
    from airflow_provider_rayorch.operators.microbatch import RayOrchSubmitOperator

    hook = mock.MagicMock(embedded=False, run_store_uri=str(tmp_path), is_local_head=False)
    hook.settings = RayOrchSettings(address="http://head:8265", run_store=str(tmp_path))
    hook.runtime_env.side_effect = lambda override=None: dict(override or {})
    with DAG("d", schedule=None) as dag:
        op = RayOrchSubmitOperator(task_id="submit", pipeline=pipeline, sources=[1, 2])
    if dag_file is not None:
        dag.fileloc = str(dag_file)
    op.__dict__["hook"] = hook
    ti = mock.MagicMock(dag_id="d", run_id="r", task_id="submit", map_index=-1, try_number=1)
    return op, {"ti": ti}


def test_misspelt_pipeline_class_names_the_module_and_the_close_name(tmp_path) -> None:
    """The module imported: neither PYTHONPATH nor shipping it to the cluster is the fix."""
    import fake_pipelines

    op, context = _cluster_operator(tmp_path, "fake_pipelines:Sqare")
    with pytest.raises(RayOrchPipelineNotImportable) as caught:
        op.prepare(context)
    message = str(caught.value)
    assert "PYTHONPATH" not in message
    assert "runtime_env" not in message
    assert fake_pipelines.__file__ in message
    assert "'Square'" in message  # the name it probably meant


def test_misspelt_pipeline_module_lists_the_dag_folder_among_the_searched_paths(
    tmp_path, monkeypatch
) -> None:
    """Airflow appends the DAG folder to sys.path: it was left out of the first six."""
    dags = tmp_path / "dags"
    (dags / "team").mkdir(parents=True)
    monkeypatch.setattr("sys.path", [*[str(tmp_path / f"p{i}") for i in range(8)], str(dags)])
    op, context = _cluster_operator(tmp_path, "pipelinez:Docs", dags / "team" / "etl.py")
    with pytest.raises(RayOrchPipelineNotImportable) as caught:
        op.prepare(context)
    message = str(caught.value)
    assert f"the DAG folder {dags}" in message
    assert "installed package" in message
    assert "py_modules" in message  # then the remote cluster must import it too
