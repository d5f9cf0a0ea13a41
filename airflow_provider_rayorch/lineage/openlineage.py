"""OpenLineage datasets and facets of a RayOrch run, built from its run store records.

Imported only by the operators' and sensors' ``get_openlineage_facets_*`` methods,
so OpenLineage is imported only where ``apache-airflow-providers-openlineage`` asks.

Every task of one run names the same datasets: one input per location
(:func:`~.naming.input_locations`, with the standard ``inputStatistics`` facet's
``fileCount``), the run's own outputs folder with a ``schema`` facet of its Parquet
columns (in a failed task's event only once something was written there), and
the ``rayorch`` run facet (:class:`RayOrchRunFacet`). A failed run adds an
``errorMessage`` facet. No connection setting is read: events hold store
URIs (credential-free, query strings dropped), source folders and summaries.
"""

from __future__ import annotations

import posixpath
from functools import cache
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.lineage.naming import dataset_name, input_locations
from airflow_provider_rayorch.lineage.summary import (
    FACET_KEY,
    SCHEMA_URL,
    error_message,
    run_facet_payload,
)
from airflow_provider_rayorch.runs import paths

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow_provider_rayorch.runs.records import MicrobatchManifest, PlanRecord
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = [
    "OUTPUT_COLUMNS",
    "input_datasets",
    "operator_lineage",
    "output_schema",
    "run_facet_class",
    "written_rows",
]

#: The outputs' Parquet columns (runs/store.py): ``value``'s type is the stored one.
OUTPUT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("source", "int64", "global 0-based source index"),
    ("outcome", "string", "present, dropped, failed or suppressed"),
    ("cause", "string", "why the source is not present (null when present)"),
    ("value", "any", "the output: a native Arrow type, or JSON text (schema metadata says)"),
)


@cache
def run_facet_class() -> type[Any]:
    """The ``rayorch`` run facet's class (built on first use: OpenLineage is optional)."""
    import attr
    from airflow.providers.common.compat.openlineage.facet import RunFacet

    @attr.define
    class RayOrchRunFacet(RunFacet):
        """A RayOrch run's lineage summary: counts, microbatches, capped failures."""

        runId: str = attr.field()
        pipeline: str | None = attr.field(default=None)
        fingerprint: str | None = attr.field(default=None)
        state: str | None = attr.field(default=None)
        jobStatus: str | None = attr.field(default=None)
        sources: dict[str, int] | None = attr.field(default=None)
        entities: dict[str, int] | None = attr.field(default=None)
        grains: dict[str, int] | None = attr.field(default=None)
        microbatchCount: int | None = attr.field(default=None)
        microbatches: list[dict[str, Any]] | None = attr.field(default=None)
        microbatch: dict[str, Any] | None = attr.field(default=None)
        failures: list[dict[str, Any]] | None = attr.field(default=None)
        elapsedSeconds: float | None = attr.field(default=None)
        #: counts and causes are not secrets; the redactor leaves them alone
        _additional_skip_redact = [
            "runId",
            "sources",
            "entities",
            "grains",
            "microbatchCount",
            "microbatches",
            "microbatch",
        ]

        @staticmethod
        def _get_schema() -> str:
            return SCHEMA_URL

    return RayOrchRunFacet


def _microbatch_file(store: RunStore, run_id: str, manifest: MicrobatchManifest) -> str:
    index = 0 if manifest.microbatch is None else manifest.microbatch.index
    ports = (manifest.outputs.ports if manifest.outputs else None) or ["out"]
    parts = paths.output_file(run_id, index, manifest.attempt or 1, ports[0])
    return posixpath.join(store.root, *parts)


def output_schema(store: RunStore, run_id: str, manifest: MicrobatchManifest | None) -> list[Any]:
    """Schema fields of the outputs: the stored Parquet file's types when a committed
    microbatch has one (a footer read), else the known layout."""
    from airflow.providers.common.compat.openlineage.facet import SchemaDatasetFacetFields

    types = {name: kind for name, kind, _ in OUTPUT_COLUMNS}
    if manifest is not None:
        try:
            import pyarrow.parquet as pq

            schema = pq.read_schema(
                store.fs.open_input_file(_microbatch_file(store, run_id, manifest))
            )
            types.update({f.name: str(f.type) for f in schema if f.name in types})
        except (OSError, ValueError):  # not committed yet, or an older layout
            pass
    return [
        SchemaDatasetFacetFields(name=name, type=types[name], description=text, ordinal_position=i)
        for i, (name, _, text) in enumerate(OUTPUT_COLUMNS, start=1)
    ]


def input_datasets(
    sources: Sequence[Any], n_columns: int = 1, *, within: Sequence[Any] | None = None
) -> list[Any]:
    """One input dataset per location of ``sources`` with its ``inputStatistics``
    ``fileCount``; with ``within`` (a microbatch's rows) counted over those only,
    leaving out locations it reads nothing from."""
    from airflow.providers.common.compat.openlineage.facet import InputDataset
    from openlineage.client.generated.input_statistics_input_dataset import (
        InputStatisticsInputDatasetFacet,
    )

    return [
        InputDataset(
            namespace=loc.dataset.namespace,
            name=loc.dataset.name,
            inputFacets={
                "inputStatistics": InputStatisticsInputDatasetFacet(fileCount=loc.sources)
            },
        )
        for loc in input_locations(sources, n_columns, within=within)
        if loc.sources > 0
    ]


def _inputs(plan: PlanRecord | None, microbatch: Mapping[str, Any] | None) -> list[Any]:
    if plan is None:
        return []
    within = None
    if microbatch is not None:
        first, count = int(microbatch["first_source"]), int(microbatch["count"])
        within = plan.rows[first : first + count]
    return input_datasets(plan.rows, plan.n_columns, within=within)


def written_rows(summary: Mapping[str, Any] | None) -> int | None:
    """Rows a committed run (or microbatch) wrote to each output port: one per source,
    whatever its outcome (a failed source's row holds its outcome and cause), so the
    summary's ``sources.total``, not ``outputs.rows`` (the present ones). None before
    anything committed."""
    if not summary or "outputs" not in summary:
        return None
    total = (summary.get("sources") or {}).get("total")
    return None if total is None else int(total)


def _ended(store: RunStore, run_id: str) -> dict[str, Any] | None:
    """The run's end as :func:`~airflow_provider_rayorch.runs.run_state.read_run_state`
    reads it (``job_status`` and why), None while it runs or once it succeeded."""
    from airflow_provider_rayorch.runs.run_state import read_run_state

    state = read_run_state(store, run_id)
    if state.state not in ("failed", "not_started", "stopped"):
        return None
    return {"job_status": state.job_status, "message": state.message}


def _output(
    store: RunStore,
    run_id: str,
    summary: Mapping[str, Any] | None,
    manifest: MicrobatchManifest | None,
) -> Any:
    from airflow.providers.common.compat.openlineage.facet import (
        OutputDataset,
        OutputStatisticsOutputDatasetFacet,
        SchemaDatasetFacet,
    )

    name = dataset_name(store.outputs_uri(run_id))
    output_facets: dict[str, Any] = {}
    rows = written_rows(summary)
    if rows is not None:
        output_facets["outputStatistics"] = OutputStatisticsOutputDatasetFacet(rowCount=rows)
    return OutputDataset(
        namespace=name.namespace,
        name=name.name,
        facets={"schema": SchemaDatasetFacet(fields=output_schema(store, run_id, manifest))},
        outputFacets=output_facets,
    )


def operator_lineage(
    store: RunStore,
    run_id: str,
    *,
    summary: Mapping[str, Any] | None = None,
    microbatch: Mapping[str, Any] | None = None,
    manifest: MicrobatchManifest | None = None,
    failed: bool = False,
) -> Any:
    """The ``OperatorLineage`` of a task of run ``run_id``.

    ``summary``: the run's (or the microbatch's) lineage summary once known;
    ``microbatch``: the descriptor a mapped microbatch task is about (its inputs are
    counted over its own sources, its facet carries its summary); ``manifest``: its
    manifest record when the caller read it (else it is read here); ``failed``: the
    task failed, so an ``errorMessage`` facet says why when the records tell, and the
    outputs folder is named only when a microbatch was committed there (a task that
    failed before submitting, or a job that committed nothing, wrote nothing)."""
    from airflow.providers.common.compat.openlineage.facet import ErrorMessageRunFacet
    from airflow.providers.openlineage.extractors import OperatorLineage

    plan = store.read_plan(run_id)
    if microbatch is not None:
        manifest = manifest or store.manifest_record(run_id, int(microbatch["index"]))
    else:
        committed = sorted(store.committed(run_id))
        manifest = store.manifest_record(run_id, committed[0]) if committed else None
    payload = run_facet_payload(run_id=run_id, summary=summary, plan=plan, microbatch=microbatch)
    run_facets: dict[str, Any] = {FACET_KEY: run_facet_class()(**payload)}
    if failed:
        message = error_message(summary, _ended(store, run_id))
        if message is None and plan is None:
            message = (
                f"RayOrch run {run_id} was never submitted: the task failed before writing "
                "its plan (a pipeline that does not import or compile; see the task log)"
            )
        elif message is None:
            message = f"RayOrch run {run_id} failed before its records tell why (see the task log)"
        run_facets["errorMessage"] = ErrorMessageRunFacet(
            message=message, programmingLanguage="python"
        )
    # a failed task names its outputs folder only when something was written there
    wrote = manifest is not None or written_rows(summary) is not None
    return OperatorLineage(
        inputs=_inputs(plan, microbatch),
        outputs=[_output(store, run_id, summary, manifest)] if wrote or not failed else [],
        run_facets=run_facets,
    )
