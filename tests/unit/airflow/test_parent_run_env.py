"""The embedded driver and a microbatch repair job learn their parent OpenLineage run
through their environment, as the submitted job does (lineage/parent.py: one rule)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from test_repair_sensors import _sensor, failed_run  # noqa: F401 (a fixture)

from airflow_provider_rayorch.lineage.parent import PARENT_ENV_VARS
from airflow_provider_rayorch.operators._embedded import EmbeddedDriver

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def openlineage_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OpenLineage provider enabled (the test environments disable it)."""
    pytest.importorskip("airflow.providers.openlineage")
    from airflow.providers.openlineage import conf

    monkeypatch.setattr(conf, "is_disabled", lambda: False)


def _ti(task_id: str, *, try_number: int = 1, max_tries: int = 0, map_index: int = -1) -> Any:
    """A task instance as the OpenLineage macros read it."""
    when = datetime(2026, 12, 1, 12, tzinfo=UTC)
    ti = mock.MagicMock(
        dag_id="dag", run_id="manual__1", task_id=task_id, map_index=map_index, stats_tags={}
    )
    ti.try_number, ti.max_tries = try_number, max_tries
    ti.dag_run = SimpleNamespace(logical_date=when, run_after=when, clear_number=0, conf={})
    return ti


def _expected(ti: Any) -> dict[str, str]:
    from airflow.providers.openlineage.plugins.macros import (
        lineage_parent_id,
        lineage_root_parent_id,
    )

    return {
        "OPENLINEAGE_PARENT_ID": lineage_parent_id(ti),
        "OPENLINEAGE_ROOT_PARENT_ID": lineage_root_parent_id(ti),
    }


def _embedded_env(monkeypatch: pytest.MonkeyPatch, **run_kw: Any) -> dict[str, str]:
    """The environment the embedded driver's process would start with."""
    seen: dict[str, str] = {}
    driver = EmbeddedDriver(log=mock.MagicMock())
    monkeypatch.setattr(driver, "_run_once", lambda store, run, args, env: seen.update(env))
    driver.run("/store", "r", [], {"RAYORCH_RUN_STORE_OPTIONS": "{}"}, **run_kw)
    return seen


def test_the_embedded_driver_names_its_parent_run(monkeypatch, openlineage_on) -> None:
    ti = _ti("task")
    env = _embedded_env(monkeypatch, ti=ti)
    assert {k: env[k] for k in _expected(ti)} == _expected(ti)
    context = json.loads(env["OPENLINEAGE_CONTEXT"])
    assert context["parent"]["job"]["name"] == "dag.task"
    assert context["parent"]["root"]["job"]["name"] == "dag"
    assert env["RAYORCH_RUN_STORE_OPTIONS"] == "{}"  # the driver's own variables stay


def test_the_embedded_driver_finds_the_running_task(monkeypatch, openlineage_on) -> None:
    """``RayOrchOperator`` hands no task instance: the running task's context has it."""
    from airflow.sdk.execution_time.context import set_current_context

    ti = _ti("task")
    with set_current_context({"ti": ti}):  # type: ignore[arg-type]
        env = _embedded_env(monkeypatch)
    assert env["OPENLINEAGE_PARENT_ID"] == _expected(ti)["OPENLINEAGE_PARENT_ID"]


def test_the_embedded_driver_gets_nothing_while_openlineage_is_off(monkeypatch) -> None:
    monkeypatch.delenv("OPENLINEAGE_PARENT_ID", raising=False)
    env = _embedded_env(monkeypatch, ti=_ti("task"))
    assert not set(PARENT_ENV_VARS) & set(env)


def test_a_repair_job_names_its_parent_run(failed_run, openlineage_on) -> None:  # noqa: F811
    """The repair job's parent is the cleared microbatch task that submitted it."""
    cluster, store, _ = failed_run
    ti = _ti("g.microbatch", try_number=2, max_tries=1, map_index=0)  # first try after a clear
    summary = _sensor(cluster, store, 0).execute({"ti": ti})
    assert summary["state"] == "success"
    (call,) = cluster.hook.submit_job.call_args_list
    env = call.kwargs["runtime_env"]["env_vars"]
    assert {k: env[k] for k in _expected(ti)} == _expected(ti)
    assert json.loads(env["OPENLINEAGE_CONTEXT"])["parent"]["job"]["name"] == "dag.g.microbatch"
