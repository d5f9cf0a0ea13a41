"""``Pipeline``: the user's dataflow, written as a ``forward`` over symbolic Ports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import CompileError, UsageError
from .program.compiler import compile_pipeline

if TYPE_CHECKING:
    from .execution.result import RunResult
    from .program.plan import Plan

__all__ = ["Pipeline"]


class Pipeline:
    """Base class of RayOrch pipelines.

    Subclasses create their ``RayModule``s in ``__init__`` (calling
    ``super().__init__()`` is optional) and describe the dataflow in
    ``forward(self, *ports)``: one Port per source column, returning the output
    Port or a tuple of them. ``forward`` is traced once, symbolically; it runs
    no UDF.
    """

    def forward(self, *ports: Any) -> Any:
        raise CompileError(
            f"{type(self).__qualname__} does not define forward(self, ...): define it to "
            "describe the dataflow over the source Ports"
        )

    def compile(self, *, optimize: bool = True) -> Plan:
        """Trace and validate the pipeline; raise ``CompileError`` on any violation.

        A module Ray cannot ship to its actors (a ``pre_init`` argument, a static
        ``run()`` keyword or a UDF class shipped by value that Ray's pickler refuses)
        is a violation too, found here with Ray's own pickler, before any actor
        starts or any job is submitted. ``optimize`` is accepted for the paper
        package's spelling and changes nothing: the plan is always lowered the same
        way."""
        if not isinstance(optimize, bool):
            raise UsageError(
                f"Pipeline.compile(optimize=...) takes True or False, got {optimize!r}"
            )
        plan = compile_pipeline(self)
        # Ray's pickler decides what ships; the program layer itself imports no ray.
        from .execution.portable import check_modules

        check_modules(plan, set(vars(self)))
        return plan

    def run(self, *columns: Any, **options: Any) -> RunResult:
        """Run the pipeline on finite inputs; see :func:`airflow_provider_rayorch.rayorch.run`."""
        from .execution.api import run

        return run(self, *columns, **options)
