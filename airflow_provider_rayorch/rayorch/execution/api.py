"""``Executor`` and ``run``: the user-facing way to run a pipeline."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import UsageError
from ..runtime.core import Core
from .gc_policy import rare_full_collections
from .result import (
    MicrobatchResult,
    RunResult,
    assemble,
    microbatch_result,
    timeline_records,
)

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator

    from ..program.plan import Plan
    from ..runtime.lineage import ValueOps
    from ..runtime.scheduling import ReadyQueueFactory
    from .driving import Delivery

__all__ = ["Executor", "run"]

BACKENDS = ("ray", "local")


class Compilable(Protocol):
    """What an Executor runs: a ``Pipeline`` or a compiled ``Plan`` (its own plan)."""

    def compile(self) -> Plan: ...


class Backend(Protocol):
    @property
    def values(self) -> ValueOps: ...

    def open(self) -> None: ...
    def warm_up(self, timeout_s: float | None = None) -> None: ...
    def close(self) -> None: ...
    def drive(self, core: Core) -> Iterator[Delivery]: ...
    def metrics(self) -> dict[str, Any]: ...


class Executor:
    """Keeps a pipeline's actor pools warm across runs.

    ``with Executor(pipeline) as ex: ex.run(sources)`` compiles the pipeline at
    once (a ``CompileError`` is raised before any actor starts), starts one
    pool per ``RayModule`` on entry and kills them on exit. ``backend="local"``
    runs the same semantics in this process, without Ray.

    Ray backend options: ``actor_start_timeout_s=600`` (constructor time allowed
    per actor; waiting for resources does not count), ``actor_start_retries=3``
    (actors of one pool that may fail to start in a row before ``ExecutionError``),
    ``actor_start_concurrency=None``, ``wait_for_resources=False``.
    """

    def __init__(
        self,
        pipeline: Compilable,
        address: str | None = None,
        backend: str = "ray",
        *,
        ray_init_kwargs: dict[str, Any] | None = None,
        progress: bool | None = None,
        ready_queue: ReadyQueueFactory | None = None,
        **backend_options: Any,
    ) -> None:
        if backend not in BACKENDS:
            raise UsageError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.pipeline = pipeline
        self.plan: Plan = pipeline.compile()
        self.address = address
        self.backend_name = backend
        self.ray_init_kwargs = dict(ray_init_kwargs or {})
        self.progress = progress
        #: Makes each Call's ready queue in the cores of later runs (None: FIFO).
        self.ready_queue = ready_queue
        self._backend_options = backend_options
        self._backend: Backend | None = None
        #: The current run's first dispatch on the core's clock, once seen.
        self._first_dispatch: float | None = None

    # -- lifecycle --------------------------------------------------------------
    def __enter__(self) -> Executor:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        if self._backend is not None:
            return
        backend: Backend
        if self.backend_name == "local":
            from .local import LocalBackend

            backend = LocalBackend(self.plan, **self._backend_options)
        else:
            from .ray_backend import RayBackend

            backend = RayBackend(
                self.plan,
                address=self.address,
                ray_init_kwargs=self.ray_init_kwargs,
                **self._backend_options,
            )
        backend.open()
        self._backend = backend

    def warm_up(self, timeout_s: float | None = None) -> None:
        """Open, then block until every actor of every pool is up.

        ``open()`` returns once each pool has one actor and the others join runs
        as they start; call this before timing warm runs, or to pay the whole
        start-up before the first source arrives."""
        self.open()
        assert self._backend is not None
        self._backend.warm_up(timeout_s)

    def close(self) -> None:
        backend, self._backend = self._backend, None
        if backend is not None:
            backend.close()

    # -- running ----------------------------------------------------------------
    def stream(
        self,
        *columns: Any,
        input_batch_size: int | None = None,
        max_active_input_batches: int = 1,
        skip_microbatches: Collection[int] = (),
    ) -> Iterator[MicrobatchResult]:
        """Run the sources and yield each microbatch as soon as it completes."""
        owned = self._backend is None
        self.open()
        assert self._backend is not None
        started = self.last_started = time.perf_counter()
        try:
            core = self._current_core = self._core(
                columns, input_batch_size, max_active_input_batches, skip_microbatches
            )
            self._first_dispatch = None
            from .progress import Progress

            with (
                rare_full_collections(),
                Progress(core.num_sources, enabled=self.progress) as progress,
            ):
                for delivery in self._backend.drive(core):
                    progress.update(delivery.microbatch)
                    yield microbatch_result(delivery, self.plan.output_names, started)
            self.last_core = core
        finally:
            if owned:
                self.close()

    def run(
        self,
        *columns: Any,
        input_batch_size: int | None = None,
        max_active_input_batches: int = 1,
    ) -> RunResult:
        """Run the sources to the end and return every output in source order."""
        owned = self._backend is None
        self.open()
        try:
            started = time.perf_counter()
            parts = list(
                self.stream(
                    *columns,
                    input_batch_size=input_batch_size,
                    max_active_input_batches=max_active_input_batches,
                )
            )
            finished = time.perf_counter()
            core = self.last_core
            assert self._backend is not None
            metrics = {
                **self._backend.metrics(),
                "stale_reports": core.stale_reports,
                "duplicate_reports": core.duplicate_reports,
            }
            return assemble(
                parts,
                len(self.plan.outputs),
                started,
                finished,
                calls=core.call_metrics(),
                pipeline=self.plan.pipeline,
                fingerprint=self.plan.fingerprint,
                metrics=metrics,
                timeline=timeline_records(core.timeline, self.last_started),
            )
        finally:
            if owned:
                self.close()

    def timeline(self, last: int | None = None) -> list[dict[str, Any]]:
        """Dispatch and report records of the current (or last) run, for reports (the
        ``last`` ones only, when given).

        Times are seconds from the start of that run; see ``RunResult.timeline``.
        """
        core = getattr(self, "_current_core", None)
        if core is None:
            return []
        records = core.timeline if last is None else core.timeline[-last:]
        return timeline_records(records, self.last_started)

    def forget_timeline(self, keep: int) -> None:
        """Drop all but the last ``keep`` timeline records of the current run once it
        holds twice that many: a long streaming run whose reports read the latest ones
        only keeps at most ``2 * keep``. Call on the thread that iterates the run."""
        core = getattr(self, "_current_core", None)
        if core is not None and len(core.timeline) >= 2 * keep:
            self.first_dispatch_at()  # noted before its record goes
            del core.timeline[: len(core.timeline) - keep]

    def first_dispatch_at(self) -> float | None:
        """When the current (or last) run dispatched its first batch, in epoch seconds
        (None before it). Call on the thread that iterates the run."""
        core = getattr(self, "_current_core", None)
        if self._first_dispatch is None and core is not None:
            first = next((r for r in core.timeline[:1] if r[0] == "dispatch"), None)
            self._first_dispatch = None if first is None else float(first[1])
        if self._first_dispatch is None:
            return None
        return time.time() - (time.perf_counter() - self._first_dispatch)

    def grains_dispatched(self) -> int:
        """Grains dispatched so far in the current (or last) run. Unlike ``call_metrics``
        it reads one counter and iterates nothing, so a progress thread may call it
        while the run goes on."""
        core = getattr(self, "_current_core", None)
        return 0 if core is None else core.grains_dispatched

    def call_metrics(self) -> list[dict[str, Any]]:
        """Per-Call metrics of the current (or last) run, so far (see ``RunResult.calls``)."""
        core = getattr(self, "_current_core", None)
        return [] if core is None else core.call_metrics()

    def _core(
        self,
        columns: tuple[Any, ...],
        input_batch_size: int | None,
        max_active: int,
        skip: Collection[int],
    ) -> Core:
        assert self._backend is not None
        return Core(
            self.plan,
            columns,
            input_batch_size=input_batch_size,
            max_active_input_batches=max_active,
            skip_microbatches=skip,
            values=self._backend.values,
            ready_queue=self.ready_queue,
        )


def run(
    pipeline: Compilable,
    *columns: Any,
    input_batch_size: int | None = None,
    max_active_input_batches: int = 1,
    address: str | None = None,
    backend: str = "ray",
    ray_init_kwargs: dict[str, Any] | None = None,
    progress: bool | None = None,
    **backend_options: Any,
) -> RunResult:
    """Run ``pipeline`` on one finite input: one column per ``forward`` parameter.

    Sources are admitted in microbatches of ``input_batch_size`` rows (all at
    once when None), at most ``max_active_input_batches`` at a time.
    """
    with Executor(
        pipeline,
        address=address,
        backend=backend,
        ray_init_kwargs=ray_init_kwargs,
        progress=progress,
        **backend_options,
    ) as executor:
        return executor.run(
            *columns,
            input_batch_size=input_batch_size,
            max_active_input_batches=max_active_input_batches,
        )
