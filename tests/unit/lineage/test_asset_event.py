"""The lineage summary as an Airflow Asset event, named as the OpenLineage datasets are."""

from __future__ import annotations

import json

import pytest
from airflow.sdk import Asset, AssetAlias

from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

from .conftest import SPEC, context_for, landing, secret_hook, ti_for, with_hook
from .events import build_event, facet_of, inputs_of, outputs_of

pytestmark = pytest.mark.timeout(120)


def _asset_event(tmp_path, store_root):
    files = landing(tmp_path, {"a": 3, "b": 1})
    op = RayOrchOperator(
        task_id="task",
        pipeline=SPEC,
        sources=files,
        input_batch_size=2,
        poll_interval=0.01,
        outputs_asset_alias="prepared",
    )
    with_hook(op, secret_hook(store_root))
    ti = ti_for()
    ctx = context_for(ti)
    summary = op.execute(ctx)
    ctx["outlet_events"].__getitem__.assert_called_with(AssetAlias("prepared"))
    add = ctx["outlet_events"].__getitem__.return_value.add
    (asset,), kwargs = add.call_args
    return op, ti, summary, asset, kwargs["extra"]


def test_the_asset_event_carries_the_lineage_summary(tmp_path, store_root, fake_engine) -> None:
    _, _, summary, asset, extra = _asset_event(tmp_path, store_root)
    assert isinstance(asset, Asset)
    assert asset.uri == f"file://{store_root}/{summary['run_id']}/outputs"
    assert asset.name == asset.uri
    assert json.loads(json.dumps(extra)) == extra  # an asset event's extra is JSON
    assert extra["run_id"] == summary["run_id"]
    assert extra["rows"] == 4
    assert extra["summary"]["sources"] == summary["sources"]
    assert extra["summary"]["microbatchCount"] == 2
    assert extra["inputs"] == [
        {
            "namespace": "file",
            "name": str(tmp_path / "landing"),
            "uri": f"file://{tmp_path / 'landing'}",
            "sources": 4,
        }
    ]


def test_the_asset_and_the_openlineage_output_are_one_dataset(
    tmp_path, store_root, fake_engine
) -> None:
    pytest.importorskip("airflow.providers.openlineage")
    from airflow.providers.common.io.assets.file import convert_asset_to_openlineage

    op, ti, _, asset, extra = _asset_event(tmp_path, store_root)
    event = build_event(op.get_openlineage_facets_on_complete(ti), "complete")
    translated = convert_asset_to_openlineage(asset, None)  # what the provider does with it
    assert [(translated.namespace, translated.name)] == outputs_of(event)
    assert [(extra["openlineage"]["namespace"], extra["openlineage"]["name"])] == outputs_of(event)
    assert {(i["namespace"], i["name"]): i["sources"] for i in extra["inputs"]} == inputs_of(event)
    assert extra["summary"] == {k: v for k, v in facet_of(event).items() if not k.startswith("_")}
