"""The run sensor attaches the lineage summary as an Asset event to its alias, under the
URI of the OpenLineage output dataset (as ``RayOrchOperator`` does, lineage/assets.py)."""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

import pytest
from airflow.sdk import Asset, AssetAlias
from airflow.sdk.exceptions import TaskDeferred
from test_repair_sensors import failed_run  # noqa: F401 (a fixture)

from airflow_provider_rayorch.lineage.assets import outputs_asset_event
from airflow_provider_rayorch.lineage.summary import CAUSE_LIMIT, FAILURES_CAP
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.sensors import _wait_mode
from airflow_provider_rayorch.sensors.rayorch import RayOrchRunSensor

pytestmark = pytest.mark.timeout(60)


def _ctx() -> dict[str, Any]:
    ti = mock.MagicMock(dag_id="dag", run_id="manual__1", task_id="g.run", map_index=-1)
    ti.try_number = 1
    return {"ti": ti, "outlet_events": mock.MagicMock()}


def _added(ctx: dict[str, Any], alias: str = "prepared") -> tuple[Asset, dict[str, Any]]:
    ctx["outlet_events"].__getitem__.assert_called_once_with(AssetAlias(alias))
    add = ctx["outlet_events"].__getitem__.return_value.add
    (asset,), kwargs = add.call_args
    return asset, kwargs["extra"]


def _sensor(store: RunStore, run_id: str = "r", **kw: Any) -> RayOrchRunSensor:
    kw.setdefault("deferrable", False)
    kw.setdefault("job_id", None)
    return RayOrchRunSensor(
        task_id="run",
        run_id=run_id,
        run_store=store.uri,
        max_failed_ratio=1.0,
        outputs_asset_alias="prepared",
        **kw,
    )


def test_the_run_sensor_emits_the_operators_asset_event(failed_run) -> None:  # noqa: F811
    _, store, _ = failed_run
    ctx = _ctx()
    sensor = _sensor(store)
    assert AssetAlias("prepared") in sensor.outlets
    summary = sensor.poke(ctx).xcom_value
    asset, extra = _added(ctx)
    expected = outputs_asset_event(summary, store.read_plan("r"))
    assert expected is not None
    assert (asset.uri, asset.name, extra) == (expected.uri, expected.name, expected.extra)
    assert asset.uri == f"file://{store.uri}/r/outputs"
    assert json.loads(json.dumps(extra)) == extra
    assert extra["summary"]["sources"] == summary["sources"]
    assert [f["source"] for f in extra["summary"]["failures"]] == [1, 4]
    assert extra["inputs"] == []  # its sources are numbers: no location


def test_the_asset_and_the_openlineage_output_are_one_dataset(failed_run) -> None:  # noqa: F811
    pytest.importorskip("airflow.providers.openlineage")
    from airflow.providers.common.io.assets.file import convert_asset_to_openlineage

    _, store, _ = failed_run
    ctx = _ctx()
    sensor = _sensor(store)
    sensor.poke(ctx)
    asset, extra = _added(ctx)
    lineage = sensor.get_openlineage_facets_on_complete(ctx["ti"])
    outputs = [(d.namespace, d.name) for d in lineage.outputs]
    translated = convert_asset_to_openlineage(asset, None)
    assert [(translated.namespace, translated.name)] == outputs
    assert [(extra["openlineage"]["namespace"], extra["openlineage"]["name"])] == outputs
    facet = lineage.run_facets["rayorch"]
    assert extra["summary"]["sources"] == facet.sources


def test_failures_are_capped_and_no_uri_query_reaches_the_event(tmp_path) -> None:
    store = RunStore(str(tmp_path / "store"))
    failures = [{"source": i, "outcome": "failed", "cause": "x" * 2000} for i in range(30)]
    store.write_run_manifest(
        "r",
        {
            "run_id": "r",
            "state": "failed",
            "sources": {"total": 40, "present": 10, "dropped": 0, "failed": 30, "suppressed": 0},
            "failures": failures,
            "outputs": {"uri": "s3://bucket/runs/r/outputs?endpoint_override=minio:9000"},
        },
    )
    ctx = _ctx()
    _sensor(store).poke(ctx)
    asset, extra = _added(ctx)
    assert asset.uri == "s3://bucket/runs/r/outputs"
    assert "endpoint_override" not in json.dumps(extra)
    assert len(extra["summary"]["failures"]) == FAILURES_CAP
    assert {len(f["cause"]) for f in extra["summary"]["failures"]} == {CAUSE_LIMIT}


def test_no_alias_no_event(failed_run) -> None:  # noqa: F811
    _, store, _ = failed_run
    ctx = _ctx()
    RayOrchRunSensor(
        task_id="run", run_id="r", run_store=store.uri, job_id=None, deferrable=False,
        max_failed_ratio=1.0,
    ).poke(ctx)  # fmt: skip
    ctx["outlet_events"].__getitem__.assert_not_called()


def test_a_failed_run_emits_no_event(failed_run) -> None:  # noqa: F811
    _, store, _ = failed_run
    ctx = _ctx()
    sensor = _sensor(store)
    sensor.max_failed_ratio = 0.0
    with pytest.raises(Exception, match="exceeds max_failed_ratio"):
        sensor.poke(ctx)
    ctx["outlet_events"].__getitem__.assert_not_called()


def test_with_an_alias_the_sensor_resumes_on_a_worker(monkeypatch, failed_run) -> None:  # noqa: F811
    """Airflow 3.3 records no asset event for a task its trigger ends (a
    ``TaskSuccessEvent`` carries XComs only): with an alias the sensor resumes on a
    worker, whose ``execute_complete`` attaches the event."""
    monkeypatch.setattr(_wait_mode, "listeners_registered", lambda: False)
    _, store, _ = failed_run
    sensor = _sensor(store, deferrable=True, job_id="j")
    assert sensor.end_from_trigger is False
    sensor.__dict__["hook"] = mock.MagicMock(**{"get_job_status.return_value": "RUNNING"})
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(_ctx())
    assert deferred.value.trigger.end_from_trigger is False
    ctx = _ctx()
    event = {"status": "success", "job_id": "j", "job_status": "SUCCEEDED"}
    summary = sensor.execute_complete(ctx, event)
    asset, extra = _added(ctx)
    assert extra["run_id"] == summary["run_id"] == "r"
    ctx = _ctx()
    sensor.execute_complete(ctx, "success")  # dag.test() resumes with the end state alone
    assert _added(ctx)[0] == asset


def test_an_alias_with_end_from_trigger_is_refused(failed_run) -> None:  # noqa: F811
    _, store, _ = failed_run
    with pytest.raises(ValueError, match="end_from_trigger"):
        _sensor(store, deferrable=True, job_id="j", end_from_trigger=True)
