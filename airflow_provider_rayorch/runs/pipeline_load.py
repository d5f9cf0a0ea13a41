"""Import, build and compile a stored plan's pipeline, and make its executor.

The driver runs and repairs plans with these; the operator imports a pipeline the
same way before it submits anything. A failure raises ``DriverError`` with the exit
code that names it (:mod:`.exit_codes`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.rayorch.errors import DriverError
from airflow_provider_rayorch.runs.exit_codes import EXIT_COMPILE, EXIT_IMPORT
from airflow_provider_rayorch.runs.secrets import ray_init_kwargs_from_env

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow_provider_rayorch.runs.records import PlanRecord

__all__ = ["IMPORT_HINT", "build_pipeline", "import_factory", "plan_executor"]

IMPORT_HINT = (
    "Pipelines must live in a module the Ray workers can import: ship it with the job's "
    "runtime_env (`py_modules` or `working_dir`, in the connection's extra or the "
    "operator's `runtime_env`) or install it on every node; a class defined inside a DAG "
    "file cannot be imported on a cluster."
)


def import_factory(spec: str) -> Callable[..., Any]:
    """Resolve ``"pkg.module:Factory"`` (or ``"pkg.module.Factory"``)."""
    module_name, sep, attr = spec.partition(":")
    if not sep:
        module_name, _, attr = spec.rpartition(".")
    if not module_name or not attr:
        raise DriverError(f"pipeline {spec!r} is not of the form 'pkg.module:Factory'", EXIT_IMPORT)
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise DriverError(
            f"cannot import pipeline {spec!r}: {exc}. {IMPORT_HINT}", EXIT_IMPORT
        ) from exc
    if not callable(obj):
        raise DriverError(f"pipeline {spec!r} is not callable", EXIT_IMPORT)
    return obj


def _engine() -> Any:
    """The engine module (a seam for tests)."""
    import airflow_provider_rayorch.rayorch as ro

    return ro


def plan_executor(plan: PlanRecord, pipeline: Any, address: str | None) -> Any:
    """The engine's Executor for ``plan``: its backend, and the ray.init options the
    Airflow side handed over by environment (never stored in the plan record)."""
    return _engine().Executor(
        pipeline,
        address=address,
        backend=plan.backend,
        ray_init_kwargs=ray_init_kwargs_from_env(plan.ray_init_kwargs) or None,
    )


def build_pipeline(plan: PlanRecord) -> tuple[Any, Any]:
    """Import, build and compile the plan's pipeline; returns it and the compiled plan."""
    ro = _engine()
    factory = import_factory(plan.pipeline)
    pipeline = factory(**plan.pipeline_kwargs)
    try:
        compiled = pipeline.compile()
    except ro.CompileError as exc:
        raise DriverError(
            f"pipeline {plan.pipeline!r} does not compile: {exc}", EXIT_COMPILE
        ) from exc
    return pipeline, compiled
