"""The example DAG rayorch_events: scheduled on a watched asset, its trigger names it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

EXAMPLE = Path(__file__).resolve().parents[3] / "dags_examples" / "rayorch_events.py"


@pytest.fixture(scope="module")
def dag():
    from airflow.dag_processing.dagbag import DagBag

    sys.path.insert(0, str(EXAMPLE.parent))
    try:
        bag = DagBag(dag_folder=str(EXAMPLE))
    finally:
        sys.path.remove(str(EXAMPLE.parent))
    assert bag.import_errors == {}
    return bag.dags["rayorch_events"]


def test_runs_on_the_inbox_asset_one_run_at_a_time(dag) -> None:
    from airflow.sdk import Asset

    assets = list(dag.timetable.asset_condition.objects)
    assert [a.name for a in assets] == ["rayorch-inbox"]
    assert isinstance(assets[0], Asset)
    assert dag.max_active_runs == 1
    assert sorted(dag.task_ids) == ["prepare", "ray_head", "record", "select_sources"]
    assert dag.get_task("record").upstream_task_ids == {"prepare", "select_sources"}


def test_prepare_runs_on_the_machines_shared_head(dag) -> None:
    """No Ray starts per run: ``ray_head`` finds (or starts once) the shared head and
    ``prepare`` submits its job there."""
    assert dag.get_task("ray_head").shared is True
    assert dag.get_task("ray_head").upstream_task_ids == {"select_sources"}
    assert dag.get_task("prepare").upstream_task_ids == {"ray_head", "select_sources"}
    assert "ray_head" in dag.get_task("prepare").ray_address


def test_the_watcher_trigger_names_its_asset_and_serializes(dag) -> None:
    from airflow.serialization.serialized_objects import DagSerialization

    from airflow_provider_rayorch.triggers.sources import RayOrchNewSourcesTrigger

    (asset,) = dag.timetable.asset_condition.objects
    (watcher,) = asset.watchers
    trigger = watcher.trigger
    assert isinstance(trigger, RayOrchNewSourcesTrigger)
    assert trigger.asset_name == asset.name
    assert trigger.uri_glob.endswith("/*.txt")
    text = json.dumps(DagSerialization.to_dict(dag))
    assert "airflow_provider_rayorch.triggers.sources.RayOrchNewSourcesTrigger" in text


def test_select_and_record_take_their_state_from_the_inbox_asset(dag) -> None:
    for task_id in ("select_sources", "record"):
        assert [i.name for i in dag.get_task(task_id).inlets] == ["rayorch-inbox"]
