"""Shared by the operators: pipeline loading, plan preparation."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.exceptions import (
    RayOrchCompileFailed,
    RayOrchPipelineNotImportable,
    RayOrchPlanChanged,
)
from airflow_provider_rayorch.rayorch.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "check_run_store_setting",
    "compile_plan",
    "pipeline_spec",
    "prepare_plan",
]


def pipeline_spec(pipeline: Any) -> str:
    """``"pkg.module:Factory"`` for a string or a class/function."""
    if isinstance(pipeline, str):
        return pipeline
    module = getattr(pipeline, "__module__", None)
    qualname = getattr(pipeline, "__qualname__", None)
    if not module or not qualname:
        raise RayOrchPipelineNotImportable(f"{pipeline!r} has no importable module path")
    return f"{module}:{qualname}"


def check_run_store_setting(run_store: str | None) -> None:
    """Refuse, at DAG parse, an operator ``run_store`` URI that carries credentials
    (a templated one is checked when the task opens it)."""
    if run_store and "{{" not in str(run_store):
        from airflow_provider_rayorch.runs.secrets import check_uri

        check_uri(str(run_store), "run_store")


def compile_plan(
    spec: str,
    pipeline_kwargs: Mapping[str, Any],
    *,
    remote: bool,
    runtime_env: Mapping[str, Any],
    shares_worker_path: bool = False,
    dag_file: str | None = None,
) -> Any:
    """Import and compile the pipeline here, before anything is submitted; returns the
    compiled plan. ``CompileError`` fails the task at once.

    ``shares_worker_path``: the Ray cluster imports what this worker imports (the
    provider's loopback head), so no ``runtime_env`` advice is given. ``dag_file``:
    the task's DAG file, whose folder an import error names among the searched paths."""
    import importlib

    from airflow_provider_rayorch.operators._pipeline_import import (
        importable_hint,
        not_importable_here,
    )
    from airflow_provider_rayorch.rayorch.errors import CompileError, DriverError
    from airflow_provider_rayorch.runs.exit_codes import EXIT_IMPORT
    from airflow_provider_rayorch.runs.pipeline_load import import_factory

    try:
        factory = import_factory(spec)
    except DriverError as exc:
        if exc.exit_code == EXIT_IMPORT and exc.__cause__ is not None:
            raise RayOrchPipelineNotImportable(
                not_importable_here(spec, exc, remote and not shares_worker_path, dag_file)
            ) from exc
        raise RayOrchPipelineNotImportable(str(exc)) from exc
    module_name = spec.partition(":")[0] if ":" in spec else spec.rpartition(".")[0]
    importable_hint(
        spec, importlib.import_module(module_name), remote, runtime_env, shares_worker_path
    )
    from airflow_provider_rayorch.runs.factory_args import kwargs_mismatch

    mismatch = kwargs_mismatch(factory, pipeline_kwargs, spec)
    if mismatch is not None:  # else a bare TypeError from deep inside the factory call
        raise RayOrchCompileFailed(mismatch)
    try:
        pipeline = factory(**dict(pipeline_kwargs))
        compiled = pipeline.compile()
    except CompileError as exc:
        raise RayOrchCompileFailed(f"pipeline {spec!r} does not compile: {exc}") from exc
    return compiled


def _semantics(compiled: Any) -> dict[str, Any]:
    """The plan record's semantic fields (empty for a plan that has none)."""
    record = getattr(compiled, "semantic_record", None)
    if compiled is None or record is None:
        return {}
    return {
        "semantic_fingerprint": str(compiled.semantic_fingerprint),
        "semantic": dict(record()),
    }


def prepare_plan(
    *,
    store: Any,
    run_id: str,
    spec: str,
    pipeline_kwargs: Mapping[str, Any],
    fingerprint: str,
    sources: Iterable[Any],
    input_batch_size: int | None,
    max_active_input_batches: int,
    max_failed_ratio: float,
    backend: str,
    on_plan_change: str,
    n_columns: int = 1,
    compiled: Any = None,
    repair: bool = False,
    strings: bool = False,
) -> Any:
    """Write the plan record, or keep the stored one when it is the same plan.

    A different stored plan (fingerprint, sources or batching) is never mixed with
    this one: ``on_plan_change="fail"`` raises, ``"replace"`` deletes the old run.
    With ``repair`` the stored plan is kept when only schedule-only options differ
    (the driver checks the semantic fingerprint and says what changed otherwise).
    The record holds what names the run, never the connection's Ray settings. The
    rows (``strings``: every one a string) are written as the run's source listing
    while they come, a microbatch per file; the plan record, written last, names it.
    """
    import json

    from airflow_provider_rayorch.runs.records import PLAN_VERSION, PlanRecord
    from airflow_provider_rayorch.runs.sources import listing_digest, write_listing

    old = store.read_plan(run_id)
    if old is not None and repair:
        return old  # the stored plan is the one to repair; the driver checks the code
    try:
        json.dumps(dict(pipeline_kwargs))
        listing = write_listing(
            store,
            run_id,
            sources,
            n_columns=int(n_columns),
            batch_size=input_batch_size,
            strings=strings,
        )
    except TypeError as exc:
        raise UsageError(
            f"sources and pipeline_kwargs must be JSON values: {exc}; pass strings, numbers, "
            "lists and dicts (a path as str(path))"
        ) from exc
    plan = PlanRecord(
        run_id=run_id,
        pipeline=spec,
        fingerprint=fingerprint,
        total_sources=listing.total,
        listing=listing.name,
        sources_digest=listing.digest,
        version=PLAN_VERSION,
        input_batch_size=input_batch_size,
        max_active_input_batches=int(max_active_input_batches),
        pipeline_kwargs=dict(pipeline_kwargs),
        max_failed_ratio=float(max_failed_ratio),
        backend=backend,
        # no Ray settings: they hold secrets (runtime_env env_vars, _redis_password); each
        # launch hands the driver the connection's, by environment (runs/secrets.py)
        ray_init_kwargs={},
        created_at=datetime.now().astimezone().isoformat(),
        n_columns=int(n_columns),
        **_semantics(compiled),
    )
    if old is not None:
        old_digest = old.sources_digest or listing_digest(old.rows)
        same = (
            old.fingerprint == plan.fingerprint
            and old.pipeline == plan.pipeline
            and old.pipeline_kwargs == plan.pipeline_kwargs
            and old_digest == plan.sources_digest
            and old.n_columns == plan.n_columns
            and old.batch_size == plan.batch_size
        )
        if same:
            store.delete_listing(run_id, listing.name)
            return old
        if on_plan_change != "replace":
            store.delete_listing(run_id, listing.name)
            raise RayOrchPlanChanged(
                f"run store {store.run_uri(run_id)} already holds run {run_id} of another plan "
                f"(fingerprint {old.fingerprint[:12]}, {old.total_sources} sources; now "
                f"{plan.fingerprint[:12]}, {plan.total_sources} sources). Outputs of two plans "
                "are never mixed: delete that directory or set on_plan_change='replace'."
            )
        store.delete_run(run_id, keep_listing=listing.name)
    return store.write_plan(plan)
