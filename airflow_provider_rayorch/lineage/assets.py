"""The run's lineage summary as an Airflow Asset event, named as OpenLineage names it.

The Asset is the run's outputs folder, under the URI the OpenLineage provider turns
back into the output dataset's ``(namespace, name)`` (:mod:`.naming`): Airflow's
asset graph and the lineage backend show one node. Its ``extra`` carries the
``rayorch`` facet's fields (:func:`~.summary.run_facet_payload`) and the input
locations, each with its OpenLineage name and Asset URI.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.lineage.naming import dataset_name, input_locations
from airflow_provider_rayorch.lineage.summary import run_facet_payload

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow.sdk import Context

    from airflow_provider_rayorch.runs.records import PlanRecord
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["OutputsAssetEvent", "attach_outputs_event", "outputs_asset_event"]


@dataclass(frozen=True)
class OutputsAssetEvent:
    """What the operator attaches to its ``AssetAlias``: ``Asset(uri, name=name)``
    with ``extra``."""

    uri: str
    name: str
    extra: dict[str, Any]


def outputs_asset_event(
    summary: Mapping[str, Any], plan: PlanRecord | None = None
) -> OutputsAssetEvent | None:
    """The event for a finished run's summary (None when it names no outputs)."""
    uri = str((summary.get("outputs") or {}).get("uri") or "")
    if not uri:
        return None
    run_id = str(summary.get("run_id") or "")
    output = dataset_name(uri)
    extra: dict[str, Any] = {
        # the keys downstream DAGs read since the first release
        "run_id": run_id,
        "rows": (summary.get("outputs") or {}).get("rows"),
        "openlineage": {"namespace": output.namespace, "name": output.name},
        "summary": run_facet_payload(run_id=run_id, summary=summary, plan=plan),
    }
    if plan is not None:
        extra["inputs"] = [
            {
                "namespace": loc.dataset.namespace,
                "name": loc.dataset.name,
                "uri": loc.dataset.uri,
                "sources": loc.sources,
            }
            for loc in input_locations(plan.rows, plan.n_columns)
        ]
    return OutputsAssetEvent(uri=output.uri, name=output.uri, extra=extra)


def attach_outputs_event(
    context: Context, alias: str, summary: Mapping[str, Any], store: RunStore, log: Any
) -> None:
    """Attach the run's outputs Asset event, with its lineage summary, to ``alias``."""
    from airflow.sdk import Asset, AssetAlias

    try:
        plan = store.read_plan(str(summary.get("run_id")))
    except Exception as exc:  # the event still names the outputs, without inputs
        log.warning("could not read the plan record for the asset event: %s", exc)
        plan = None
    event = outputs_asset_event(summary, plan)
    if event is None:
        log.warning("run %s names no outputs folder: no asset event", summary.get("run_id"))
        return
    context["outlet_events"][AssetAlias(alias)].add(
        Asset(uri=event.uri, name=event.name), extra=event.extra
    )
