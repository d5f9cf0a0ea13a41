"""Workload 1 on this engine and on the paper's package (the same spelling).

Both take a ``Pipeline`` of ``RayModule`` Calls: split (a Call, since the
paper's package can only ``F.expand`` a Call's output) -> expand -> render ->
page model -> reduce -> write. Cold runs include creating the ``Executor`` and
its actors; warm runs reuse it.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..measure import (
    Measurement,
    all_actors_up,
    expected_digests,
    host_cpu_busy,
    host_cpu_times,
    measure,
)
from ..workload import PageModel, Render, Split, Workload, Write, make_docs

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["ENGINES", "make_pipeline", "run_pair"]

#: System name -> importable module with the rayorch API.
ENGINES = {
    "this engine": "airflow_provider_rayorch.rayorch",
    "rayorch (paper)": "rayorch",
}


def make_pipeline(
    ro: ModuleType,
    w: Workload,
    *,
    ours: bool,
    containment: bool = True,
    batching: str | None = None,
    in_flight: int | None = None,
    own_processes: bool = False,
) -> Any:
    """The workload-1 pipeline for ``ro``. ``batching`` (render and page model),
    ``in_flight`` (the page model's ``max_batches_in_flight``) and ``own_processes``
    (split, render and write opt out of the default shared process:
    ``share_process=False``; by default they ask for nothing and share one) are
    this engine's options only."""
    failure = ro.GroupFailure if containment else ro.RecordFailure
    extra: dict[str, Any] = {"batching": batching} if (ours and batching) else {}
    light: dict[str, Any] = {"share_process": False} if (ours and own_processes) else {}
    model_extra: dict[str, Any] = (
        {"max_batches_in_flight": in_flight} if (ours and in_flight) else {}
    )
    accel = {"num_cpus": 0, "resources": {"accel": 1}}

    class DocPipeline(ro.Pipeline):  # type: ignore[name-defined]
        def __init__(self) -> None:
            self.split = (
                ro.RayModule(Split)
                .pre_init(w.cost)
                .ray_options(
                    replicas=w.split_replicas, batch_size=w.split_batch, num_cpus=0, **light
                )
            )
            self.render = (
                ro.RayModule(Render)
                .pre_init(w.cost)
                .ray_options(
                    replicas=w.render_replicas,
                    batch_size=w.render_batch,
                    num_cpus=0,
                    **extra,
                    **light,
                )
            )
            self.model = (
                ro.RayModule(PageModel)
                .pre_init(w.cost, failure, w.poison_ordinal)
                .ray_options(
                    replicas=w.accelerators,
                    batch_size=w.model_batch,
                    **accel,
                    **extra,
                    **model_extra,
                )
            )
            self.write = (
                ro.RayModule(Write)
                .pre_init(w.cost)
                .ray_options(
                    replicas=w.write_replicas, batch_size=w.write_batch, num_cpus=0, **light
                )
            )

        def forward(self, doc: Any) -> Any:
            pages = ro.F.expand(self.split(doc))
            return self.write(ro.F.reduce(self.model(self.render(pages))))

    return DocPipeline()


def run_pair(
    system: str,
    w: Workload,
    *,
    containment: bool = True,
    batching: str | None = None,
    warm_runs: int = 1,
    executor_options: dict[str, Any] | None = None,
    own_processes: bool = False,
) -> list[Measurement]:
    """One cold run (executor creation included) then ``warm_runs`` warm runs.
    ``executor_options`` go to this engine's ``Executor``; ``own_processes``: see
    ``make_pipeline``."""
    ro = importlib.import_module(ENGINES[system])
    docs = make_docs(w)
    rows = [asdict(d) for d in docs]
    expected = expected_digests(docs, w.poison_ordinal if w.poison_share else None)
    pipeline = make_pipeline(
        ro,
        w,
        ours=system == "this engine",
        containment=containment,
        batching=batching,
        own_processes=own_processes,
    )
    kwargs = {
        "input_batch_size": w.input_batch_size,
        "max_active_input_batches": w.max_active_input_batches,
    }
    out: list[Measurement] = []
    started = time.time()
    executor = (
        ro.Executor(pipeline)
        if system != "this engine"
        else ro.Executor(pipeline, progress=False, **(executor_options or {}))
    )
    with executor as ex:
        for i in range(1 + warm_runs):
            if i:
                all_actors_up(ex)
                started = time.time()
            cpu = time.process_time()
            host = host_cpu_times()
            result = ex.run(rows, **kwargs)
            finished = time.time()
            cpu = time.process_time() - cpu
            host_busy = host_cpu_busy(host, host_cpu_times())
            m = measure(
                system,
                "cold" if i == 0 else "warm",
                list(result.outputs),
                started,
                finished,
                expected,
                w.accelerators,
            )
            m.extra.update(engine_metrics(result))
            m.extra["driver_cpu_s"] = round(cpu, 4)
            m.extra["host_cpu_busy"] = host_busy
            out.append(m)
    return out


def engine_metrics(result: Any) -> dict[str, Any]:
    """The engine's own per-Call counters, when it reports them as dicts."""
    calls = getattr(result, "calls", ())
    figures: dict[str, Any] = {}
    for call in calls:
        if isinstance(call, dict):
            figures[call["name"]] = {
                "rpcs": call["rpcs"],
                "mean_batch": round(call["mean_batch"], 3),
                "busy_s": call["busy_s"],
                "suppressed": call["suppressed"],
                "withdrawn": call.get("withdrawn", 0),
                "grains": call["grains_dispatched"],
            }
        else:  # the paper's package: frozen CallMetrics
            figures[str(call.udf_name)] = {
                "rpcs": call.rpcs,
                "mean_batch": round(call.average_batch, 3),
                "grains": call.grain_dispatches,
            }
    skipped = (getattr(result, "metrics", None) or {}).get("rows_skipped")
    return {"calls": figures, **({"rows_skipped": skipped} if skipped is not None else {})}


def run_variants(
    w: Workload,
    variants: dict[str, dict[str, Any]],
    rounds: int,
    contexts: dict[str, Any] | None = None,
) -> dict[str, list[Measurement]]:
    """Paired warm runs of this engine: one open ``Executor`` per distinct pipeline,
    the variants alternating round after round so drift hits them alike.

    ``variants`` maps a name to ``make_pipeline`` keywords; ``contexts`` maps a
    name to a context-manager factory taking the variant's executor, entered
    around its runs (e.g. the non-FIFO ready order).
    """
    from contextlib import ExitStack, nullcontext

    ro = importlib.import_module(ENGINES["this engine"])
    docs = make_docs(w)
    rows = [asdict(d) for d in docs]
    expected = expected_digests(docs, w.poison_ordinal if w.poison_share else None)
    kwargs = {
        "input_batch_size": w.input_batch_size,
        "max_active_input_batches": w.max_active_input_batches,
    }
    contexts = contexts or {}
    out: dict[str, list[Measurement]] = {name: [] for name in variants}
    with ExitStack() as stack:
        executors: dict[str, Any] = {}
        by_key: dict[str, Any] = {}
        for name, options in variants.items():
            key = repr(sorted(options.items()))
            if key not in by_key:
                pipeline = make_pipeline(ro, w, ours=True, **options)
                by_key[key] = stack.enter_context(ro.Executor(pipeline, progress=False))
                all_actors_up(by_key[key])
            executors[name] = by_key[key]
        skipped_before: dict[int, int] = {}
        for _ in range(rounds):
            for name, ex in executors.items():
                factory = contexts.get(name)
                with factory(ex) if factory else nullcontext():
                    started = time.time()
                    cpu = time.process_time()
                    result = ex.run(rows, **kwargs)
                    finished = time.time()
                    cpu = time.process_time() - cpu
                m = measure(
                    name, "warm", list(result.outputs), started, finished, expected, w.accelerators
                )
                m.extra.update(engine_metrics(result))
                # The engine counts skipped rows over the Executor's life: this run's share.
                total = int(m.extra.get("rows_skipped") or 0)
                m.extra["rows_skipped"] = total - skipped_before.get(id(ex), 0)
                skipped_before[id(ex)] = total
                m.extra["driver_cpu_s"] = round(cpu, 4)
                out[name].append(m)
    return out
