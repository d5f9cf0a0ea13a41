"""How the sensors wait, beside listener plugins and without (sensors/_wait_mode.py).

Beside a listener a deferred sensor would resume on a worker, where Airflow 3.3's
scheduler can fail the resumed try (apache/airflow#72716; tests/e2e/
test_sensors_under_listener.py measures it): the sensors wait on a worker instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from airflow.sdk import DAG
from airflow.sdk.exceptions import TaskDeferred
from airflow.sdk.listener import get_listener_manager

from airflow_provider_rayorch.operators.microbatch import rayorch_microbatch_group
from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.sensors._wait_mode import (
    LISTENER_SENSOR_WINDOW,
    WaitMode,
    listeners_registered,
    wait_mode,
)
from airflow_provider_rayorch.sensors.rayorch import RayOrchMicrobatchSensor, RayOrchRunSensor

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.timeout(30)

MB = {"index": 0, "first_source": 0, "count": 2}


class _Listener:
    """A listener plugin, as the OpenLineage provider registers one."""

    def on_task_instance_running(self, previous_state, task_instance) -> None:
        return None


@pytest.fixture(autouse=True)
def no_listeners() -> Iterator[None]:
    """No listener registered unless a test adds one (Airflow may load its example
    plugins' listener in a test process); the process's own come back afterwards."""
    manager = get_listener_manager()
    kept = list(manager.pm.get_plugins())
    manager.clear()
    try:
        yield
    finally:
        manager.clear()
        for plugin in kept:
            manager.add_listener(plugin)


@pytest.fixture
def listener(no_listeners) -> _Listener:
    plugin = _Listener()
    get_listener_manager().add_listener(plugin)
    return plugin


def test_without_listeners_the_sensors_defer_and_end_in_the_triggerer() -> None:
    assert not listeners_registered()
    assert wait_mode(None, None) == WaitMode(deferrable=True, end_from_trigger=True)


@pytest.mark.usefixtures("listener")
def test_beside_a_listener_the_sensors_wait_on_a_worker() -> None:
    assert listeners_registered()
    assert wait_mode(None, None) == WaitMode(deferrable=False, end_from_trigger=False)


@pytest.mark.usefixtures("listener")
@pytest.mark.parametrize(
    ("deferrable", "end_from_trigger"), [(True, False), (True, True), (False, True)]
)
def test_explicit_values_win(deferrable: bool, end_from_trigger: bool) -> None:
    assert wait_mode(deferrable, end_from_trigger) == WaitMode(deferrable, end_from_trigger)


def _microbatch_sensor(tmp_path, **kw) -> RayOrchMicrobatchSensor:
    return RayOrchMicrobatchSensor(
        task_id="mb", microbatch=MB, run_id="r", run_store=str(tmp_path), poke_interval=0.01, **kw
    )


@pytest.mark.usefixtures("listener")
def test_beside_a_listener_a_microbatch_sensor_never_defers(tmp_path) -> None:
    """Its execute pokes on the worker until the manifest commits: no TaskDeferred,
    hence no resumed try for Airflow's scheduler to fail."""
    sensor = _microbatch_sensor(tmp_path)
    assert (sensor.deferrable, sensor.end_from_trigger) == (False, False)
    store = RunStore(str(tmp_path))
    looks = 0
    real_look = sensor._look

    def look(index=None):
        nonlocal looks
        looks += 1
        if looks == 2:  # commits while the sensor waits
            store.commit_microbatch("r", 0, _manifest())
        return real_look(index)

    sensor._look = look  # type: ignore[method-assign]
    summary = sensor.execute({"ti": _Ti()})
    assert summary["sources"]["present"] == 2
    assert looks == 2  # it waited on the worker, looking again


def test_without_listeners_a_microbatch_sensor_defers(tmp_path) -> None:
    with pytest.raises(TaskDeferred) as deferred:
        _microbatch_sensor(tmp_path).execute({"ti": _Ti()})
    assert deferred.value.trigger.end_from_trigger is True


@pytest.mark.usefixtures("listener")
def test_beside_a_listener_the_run_sensor_waits_on_a_worker(tmp_path) -> None:
    run = RayOrchRunSensor(task_id="run", run_id="r", run_store=str(tmp_path), job_id="j")
    assert (run.deferrable, run.end_from_trigger) == (False, False)


@pytest.mark.usefixtures("listener")
def test_beside_a_listener_the_group_bounds_its_waiting_sensors() -> None:
    with DAG("wait_mode_group", schedule=None) as dag:
        rayorch_microbatch_group("docs", pipeline="m:f", sources=["a", "b"])
    assert dag.get_task("docs.microbatch").max_active_tis_per_dagrun == LISTENER_SENSOR_WINDOW


def test_the_group_gives_each_sensor_its_own_keywords() -> None:
    """``sensor_kwargs`` reach the microbatch sensors, ``run_sensor_kwargs`` the run
    sensor; either may override what the group sets (``poke_interval``)."""
    dag = _group_dag(
        deferrable=True,
        poke_interval=5.0,
        sensor_kwargs={"end_from_trigger": False, "poke_interval": 2.0},
        run_sensor_kwargs={"end_from_trigger": False, "poke_interval": 3.0},
    )
    microbatch = dag.get_task("docs.microbatch").partial_kwargs
    assert (microbatch["end_from_trigger"], microbatch["poke_interval"]) == (False, 2.0)
    run = dag.get_task("docs.run")
    assert (run.deferrable, run.end_from_trigger, run.poke_interval) == (True, False, 3.0)


@pytest.mark.usefixtures("listener")
@pytest.mark.parametrize(
    ("deferrable", "sensor_kwargs", "window"),
    [
        (None, {"max_active_tis_per_dagrun": 9}, 9),  # the user's own window
        (True, {"deferrable": False}, LISTENER_SENSOR_WINDOW),  # waiting on workers
    ],
)
def test_the_window_follows_the_sensors_own_keywords(deferrable, sensor_kwargs, window) -> None:
    dag = _group_dag(deferrable=deferrable, sensor_kwargs=sensor_kwargs)
    assert dag.get_task("docs.microbatch").max_active_tis_per_dagrun == window


def _group_dag(**kwargs: Any) -> DAG:
    """A DAG holding one ``rayorch_microbatch_group`` with ``kwargs``."""
    with DAG("wait_mode_group", schedule=None) as dag:
        rayorch_microbatch_group("docs", pipeline="m:f", sources=["a", "b"], **kwargs)
    return dag


@pytest.mark.parametrize(
    ("name", "given"),
    [("sensor_kwargs", {"run_id": "x"}), ("run_sensor_kwargs", {"trigger_rule": "all_success"})],
)
def test_the_keywords_that_wire_the_group_are_refused(name, given) -> None:
    with DAG("wait_mode_group", schedule=None), pytest.raises(UsageError) as caught:
        rayorch_microbatch_group("docs", pipeline="m:f", sources=["a"], **{name: given})
    message = str(caught.value)
    assert f"{name} sets {next(iter(given))}" in message
    assert "the group sets itself" in message


def test_without_listeners_the_group_sets_no_window() -> None:
    with DAG("wait_mode_group", schedule=None) as dag:
        rayorch_microbatch_group("docs", pipeline="m:f", sources=["a", "b"])
    assert dag.get_task("docs.microbatch").max_active_tis_per_dagrun is None


class _Ti:
    """The few task-instance fields a first try reads."""

    try_number = 1
    max_tries = 0
    dag_id, run_id, task_id, map_index = "d", "r", "mb", 0

    def xcom_push(self, key, value) -> None:
        pass


def _manifest() -> dict:
    return {
        "run_id": "r",
        "index": 0,
        "state": "success",
        "sources": {"total": 2, "present": 2, "dropped": 0, "failed": 0, "suppressed": 0},
        "failures": [],
    }


def test_a_run_sensor_with_an_outputs_alias_waits_on_a_worker(tmp_path) -> None:
    """Its Asset event is attached on a worker; waiting there, it never resumes."""
    run = RayOrchRunSensor(
        task_id="run", run_id="r", run_store=str(tmp_path), job_id="j", outputs_asset_alias="a"
    )
    assert (run.deferrable, run.end_from_trigger) == (False, False)


def test_the_group_gives_its_outputs_alias_to_the_run_sensor() -> None:
    with DAG("wait_mode_group", schedule=None) as dag:
        rayorch_microbatch_group(
            "docs", pipeline="m:f", sources=["a", "b"], outputs_asset_alias="prepared"
        )
    assert dag.get_task("docs.run").outputs_asset_alias == "prepared"
    assert [o.name for o in dag.get_task("docs.run").outlets] == ["prepared"]


def test_the_submit_refuses_an_outputs_alias() -> None:
    from airflow_provider_rayorch.operators.microbatch import RayOrchSubmitOperator

    with pytest.raises(ValueError, match="give the alias to the run sensor"):
        RayOrchSubmitOperator(
            task_id="submit", pipeline="m:f", sources=["a"], outputs_asset_alias="prepared"
        )
