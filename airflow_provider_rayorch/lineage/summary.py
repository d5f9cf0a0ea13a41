"""What lineage says about a run, from its stored records (plan, manifests, summaries).

One JSON object, :func:`run_facet_payload`, is the provider's OpenLineage run facet
(``rayorch``) and the ``extra`` of its Airflow Asset event, so both name the same
counts. Its JSON schema ships beside this module (``schema/RayOrchRunFacet.json``).
Nothing here imports Airflow or OpenLineage.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_rayorch.runs.records import PlanRecord

__all__ = [
    "FACET_KEY",
    "FAILURES_CAP",
    "MICROBATCHES_CAP",
    "SCHEMA_URL",
    "error_message",
    "facet_schema",
    "run_facet_payload",
]

#: The run facet's key in an OpenLineage event's ``run.facets``.
FACET_KEY = "rayorch"
#: The facet's ``_schemaURL``: a URN naming the schema file shipped in this package
#: (``airflow_provider_rayorch/lineage/schema/RayOrchRunFacet.json``, its ``$id``), at
#: the facet's schema version; docs/airflow/lineage.md says how to read it.
SCHEMA_URL = "urn:airflow-provider-rayorch:lineage:RayOrchRunFacet:1-0-0#/$defs/RayOrchRunFacet"
#: Failures listed in a facet (the summary keeps up to 100; a lineage event stays small).
FAILURES_CAP = 20
#: Microbatches listed in a facet; ``microbatchCount`` is never capped.
MICROBATCHES_CAP = 200
#: Longest failure cause kept in a facet.
CAUSE_LIMIT = 500


def facet_schema() -> dict[str, Any]:
    """The facet's JSON schema, as shipped in the package."""
    text = resources.files(__package__).joinpath("schema", "RayOrchRunFacet.json").read_text()
    return dict(json.loads(text))


def _cut(text: Any, limit: int = CAUSE_LIMIT) -> str:
    value = str(text)
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _ints(value: Any) -> dict[str, int] | None:
    if not isinstance(value, Mapping):
        return None
    return {str(k): int(v) for k, v in value.items() if isinstance(v, int | float)}


def _microbatch(entry: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "index": int(entry["index"]),
        "firstSource": int(entry["first_source"]),
        "count": int(entry["count"]),
    }
    if entry.get("state") is not None:
        out["state"] = str(entry["state"])
    return out


def _failures(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "source": int(f["source"]),
            "outcome": str(f.get("outcome")),
            "cause": _cut(f.get("cause", "")),
        }
        for f in list(summary.get("failures") or [])[:FAILURES_CAP]
    ]


def run_facet_payload(
    *,
    run_id: str,
    summary: Mapping[str, Any] | None = None,
    plan: PlanRecord | None = None,
    microbatch: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The facet's fields (JSON values): the lineage summary's counts, microbatches and
    capped failures with their causes.

    ``summary``: a run or microbatch lineage summary (None before the run ended: the
    plan then gives the sources and the planned microbatches). ``microbatch``: the
    descriptor of the microbatch the event is about (a mapped microbatch task's)."""
    data: dict[str, Any] = {"runId": run_id}
    summary = summary or {}
    for key, field in (("pipeline", "pipeline"), ("fingerprint", "fingerprint")):
        value = summary.get(key) or (getattr(plan, key, None) if plan is not None else None)
        if value:
            data[field] = str(value)
    if summary.get("state"):
        data["state"] = str(summary["state"])
    if summary.get("job_status"):
        data["jobStatus"] = str(summary["job_status"])
    for key in ("sources", "entities", "grains"):
        counts = _ints(summary.get(key))
        if counts is not None:
            data[key] = counts
    if "sources" not in data and plan is not None:
        data["sources"] = {"total": int(microbatch["count"]) if microbatch else plan.total_sources}
    entries: Sequence[Mapping[str, Any]] | None = summary.get("microbatches")
    if entries is None and plan is not None and microbatch is None:
        entries = plan.microbatches()
    if entries is not None:
        data["microbatchCount"] = len(entries)
        data["microbatches"] = [_microbatch(e) for e in list(entries)[:MICROBATCHES_CAP]]
    scope = microbatch or summary.get("microbatch")
    if isinstance(scope, Mapping):
        data["microbatch"] = _microbatch(scope)
    if summary.get("failures") is not None:
        data["failures"] = _failures(summary)
    if summary.get("elapsed_s") is not None:
        data["elapsedSeconds"] = float(summary["elapsed_s"])
    return data


def error_message(
    summary: Mapping[str, Any] | None, job_state: Mapping[str, Any] | None = None
) -> str | None:
    """Why a run (or microbatch) failed, from its records; None when they show no failure."""
    if summary and summary.get("state") == "failed":
        counts = summary.get("sources") or {}
        bad = int(counts.get("failed", 0)) + int(counts.get("suppressed", 0))
        text = (
            f"RayOrch run {summary.get('run_id')}: {bad} of {int(counts.get('total', 0))} "
            "sources failed or were suppressed"
        )
        failures = list(summary.get("failures") or [])
        if failures:
            first = failures[0]
            text += f"; first: source {first.get('source')} {first.get('outcome')}: "
            text += _cut(first.get("cause", ""))
        return text
    if job_state and job_state.get("message"):
        return _cut(f"Ray job {job_state.get('job_status')}: {job_state['message']}", 2000)
    return None
