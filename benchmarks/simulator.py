"""A discrete-event simulator that drives the real runtime core on a virtual clock.

    python -m benchmarks.simulator --accelerators 1024 --pages 10000000 \
        --calibration docs/benchmarks/results.json

The core (``runtime.core.Core``) is the same object the Ray backend drives: it
decides admission, FIFO order, batch cut and gathers. Only the executor is
simulated. Each worker runs the batches sent to it one after another, each
taking the workload's cost model (``fixed + per_item * n`` seconds); a report
reaches the driver ``rpc_s`` after the batch ends and a dispatch reaches its
worker ``rpc_s`` after it is sent. The driver is one thread: it handles one
report at a time and is busy for ``driver_s_per_batch + driver_s_per_grain *
rows`` per report, so the scheduler's own cost (measured on the real engine by
workload 4) advances the virtual clock and caps throughput at scale.
"""

from __future__ import annotations

import argparse
import heapq
import json
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.execution.gc_policy import rare_full_collections
from airflow_provider_rayorch.rayorch.runtime.core import Core
from airflow_provider_rayorch.rayorch.runtime.events import (
    BatchFinished,
    Dispatch,
    MicrobatchDone,
    RunFinished,
    WorkerAdded,
)

from .systems.rayorch import make_pipeline
from .workload import PageModel, Render, Split, Workload, Write, ideal_seconds, make_docs

__all__ = ["SimConfig", "SimResult", "simulate"]


@dataclass(frozen=True)
class SimConfig:
    """The executor's timing; defaults are replaced by measured figures in the suite."""

    #: Driver time per Grain reported (lineage, queues, commit, next dispatch).
    driver_s_per_grain: float = 1 / 60_000
    #: Driver time per batch report (RPC bookkeeping, result handling).
    driver_s_per_batch: float = 0.0002
    #: One-way latency of a dispatch or a report.
    rpc_s: float = 0.0005


@dataclass
class SimResult:
    makespan_s: float
    first_doc_s: float
    pages: int
    docs: int
    accelerators: int
    busy_fraction: float
    batch_fill: float
    driver_busy_fraction: float
    ideal_s: float
    wall_s: float
    grains: int

    def as_dict(self) -> dict[str, Any]:
        return {k: round(v, 5) if isinstance(v, float) else v for k, v in asdict(self).items()}


class _Workers:
    """Per-worker FIFO service: when each worker is next free."""

    def __init__(self) -> None:
        self.free_at: dict[Any, float] = {}

    def serve(self, worker: Any, arrives: float, cost: float) -> float:
        start = max(self.free_at.get(worker, 0.0), arrives)
        end = start + cost
        self.free_at[worker] = end
        return end


def simulate(
    w: Workload,
    cfg: SimConfig | None = None,
    docs: list[Any] | None = None,
    ready_queue: Any = None,
) -> SimResult:
    """Run workload ``w`` to the end on the virtual clock; returns its figures.

    ``ready_queue`` is the core's ready-queue factory (None: FIFO), for ablations."""
    cfg = cfg or SimConfig()
    docs = docs if docs is not None else make_docs(w)
    rows = [{"doc": d.doc, "pages": d.pages, "poisoned": False} for d in docs]
    plan = make_pipeline(ro, w, ours=True).compile()
    now = [0.0]
    core = Core(
        plan,
        [rows],
        input_batch_size=w.input_batch_size,
        max_active_input_batches=w.max_active_input_batches,
        clock=lambda: now[0],
        ready_queue=ready_queue,
    )
    c = w.cost
    by_udf = {m.id: m.udf for m in plan.modules}
    workers = _Workers()
    heap: list[tuple[float, int, int, list[Any], float, Any]] = []
    seq = 0
    model_busy = 0.0
    model_batches = 0
    pages = 0
    completions: list[float] = []
    driver_busy = 0.0
    grains = 0

    def cost_of(udf: Any, column: list[Any]) -> tuple[float, list[Any]]:
        n = len(column)
        if udf is Split:
            return c.split(n), [list(range(r["pages"])) for r in column]
        if udf is Render:
            return c.render(n), column
        if udf is PageModel:
            return c.model(n), column
        if udf is Write:
            return c.write(n, sum(len(x) for x in column)), column
        raise TypeError(f"no cost for {udf!r}")

    def issue(commands: list[Any], at: float) -> bool:
        nonlocal seq, model_busy, model_batches, pages
        finished = False
        for cmd in commands:
            kind = type(cmd)
            if kind is Dispatch:
                udf = by_udf[cmd.node.module]
                cost, out = cost_of(udf, cmd.columns[0])
                end = workers.serve(cmd.worker, at + cfg.rpc_s, cost)
                if udf is PageModel:
                    model_busy += cost
                    model_batches += 1
                    pages += len(out)
                elif udf is Write:
                    completions.extend([end] * len(out))
                seq += 1
                heapq.heappush(heap, (end + cfg.rpc_s, seq, cmd.batch, out, cost, cmd.worker))
            elif kind is RunFinished:
                finished = True
            elif kind is not MicrobatchDone:
                raise RuntimeError(f"unexpected command {cmd!r}")
        return finished

    wall = time.perf_counter()
    commands: list[Any] = []
    for module in plan.modules:
        for r in range(module.options.replicas):
            commands += core.handle(WorkerAdded(f"{module.name}#{r}", module.id))
    commands += core.start()
    driver_at = 0.0
    done = issue(commands, driver_at)
    with rare_full_collections():
        while not done:
            t, _, batch, out, cost, _worker = heapq.heappop(heap)
            driver_at = max(driver_at, t)
            now[0] = driver_at
            commands = core.handle(BatchFinished(batch, out, cost))
            spent = cfg.driver_s_per_batch + cfg.driver_s_per_grain * len(out)
            grains += len(out)
            driver_busy += spent
            driver_at += spent
            done = issue(commands, driver_at)
    wall = time.perf_counter() - wall
    makespan = driver_at
    return SimResult(
        makespan_s=makespan,
        first_doc_s=min(completions) if completions else 0.0,
        pages=pages,
        docs=len(docs),
        accelerators=w.accelerators,
        busy_fraction=model_busy / (w.accelerators * makespan) if makespan else 0.0,
        batch_fill=pages / model_batches if model_batches else 0.0,
        driver_busy_fraction=driver_busy / makespan if makespan else 0.0,
        ideal_s=ideal_seconds(w, docs)["bound_s"],
        wall_s=wall,
        grains=grains,
    )


def docs_for_pages(w: Workload, pages: int) -> Workload:
    """``w`` with about ``pages`` pages in total (documents scaled from the mean)."""
    return replace(w, docs=max(1, round(pages / w.mean_pages)))


def config_from_results(results: dict[str, Any]) -> SimConfig:
    """The simulator's driver costs, measured on this engine (a suite results dict).

    Per Grain: the pure core's cost (workload 4). Per batch: what is left of the
    driver's CPU time in this engine's warm workload-1 runs once the Grains are
    paid for (submitting the actor call, serializing its arguments, handling
    the report), divided by the batches. Defaults when a section did not run.
    """
    out = SimConfig()
    pure = (results.get("overhead") or {}).get("pure_core", {}).get("grains_per_s")
    if pure:
        out = replace(out, driver_s_per_grain=1 / pure)
    warm = (results.get("e2e") or {}).get("systems", {}).get("this engine", {}).get("warm", {})
    cpu, calls = warm.get("driver_cpu_s"), warm.get("calls")
    if cpu and calls:
        rpcs = sum(c["rpcs"] for c in calls.values())
        grains = sum(c["grains"] for c in calls.values())
        per_batch = (cpu - grains * out.driver_s_per_grain) / rpcs if rpcs else 0.0
        if per_batch > 0:
            out = replace(out, driver_s_per_batch=per_batch)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accelerators", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument(
        "--calibration",
        metavar="RESULTS_JSON",
        help="take the driver costs from a suite results.json (docs/benchmarks/results.json)",
    )
    parser.add_argument("--driver-grain-us", type=float, help="driver cost per Grain")
    parser.add_argument("--driver-batch-ms", type=float, help="driver cost per batch")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cfg = SimConfig()
    if args.calibration:
        with open(args.calibration) as fh:
            cfg = config_from_results(json.load(fh))
    if args.driver_grain_us is not None:
        cfg = replace(cfg, driver_s_per_grain=args.driver_grain_us * 1e-6)
    if args.driver_batch_ms is not None:
        cfg = replace(cfg, driver_s_per_batch=args.driver_batch_ms * 1e-3)
    for a in args.accelerators:
        w = docs_for_pages(Workload().scaled(a), args.pages)
        r = simulate(w, cfg)
        if args.json:
            print(json.dumps({**r.as_dict(), "config": asdict(cfg)}))
        else:
            print(
                f"{a:5d} accel {r.pages:>10,} pages: makespan {r.makespan_s:9.2f} s "
                f"(ideal {r.ideal_s:8.2f} s, {r.ideal_s / r.makespan_s:5.1%}), "
                f"accel busy {r.busy_fraction:5.1%}, fill {r.batch_fill:5.2f}, "
                f"driver busy {r.driver_busy_fraction:5.1%}, sim wall {r.wall_s:6.1f} s"
            )


if __name__ == "__main__":
    main()
