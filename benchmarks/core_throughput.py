"""How many Grains per second the pure lineage core sustains on one core.

    python -m benchmarks.core_throughput --sources 20000 --children 50

Drives the core with an instant fake executor (every batch completes at once
with its inputs as outputs) on expand -> no-op Call -> reduce, so the figure is
the core's own cost per Grain: lineage, FIFO queues, dispatch, commit, gather.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
from collections import deque
from typing import Any

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.execution.gc_policy import rare_full_collections
from airflow_provider_rayorch.rayorch.runtime.core import Core
from airflow_provider_rayorch.rayorch.runtime.events import (
    BatchFinished,
    Dispatch,
    RunFinished,
    WorkerAdded,
)
from benchmarks.stream_options import add_stream_options


class NoOp:
    def run(self, items: list[Any]) -> list[Any]:
        return items


class Fanout(ro.Pipeline):
    def __init__(self, batch_size: int, replicas: int) -> None:
        self.noop = ro.RayModule(NoOp).ray_options(replicas=replicas, batch_size=batch_size)

    def forward(self, doc: Any) -> Any:
        pages = ro.F.expand(doc, domain="page")
        return ro.F.reduce(self.noop(pages))


def drive(core: Core, replicas: int) -> int:
    """Run ``core`` to the end with instant completions; returns Grains committed."""
    pending: deque[Dispatch] = deque()
    grains = 0
    commands: list[Any] = []
    for r in range(replicas):
        commands += core.handle(WorkerAdded(f"noop#{r}", 0))
    commands += core.start()
    while True:
        for command in commands:
            if type(command) is Dispatch:
                pending.append(command)
            elif type(command) is RunFinished:
                return grains
        batch = pending.popleft()
        grains += len(batch.columns[0])
        commands = core.handle(BatchFinished(batch.batch, batch.columns[0]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_stream_options(parser, sources=20_000, input_batch_size=1000)
    parser.add_argument("--children", type=int, default=50)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args()

    plan = Fanout(args.batch_size, args.replicas).compile()
    sources = [list(range(args.children))] * args.sources
    core = Core(
        plan,
        [sources],
        input_batch_size=args.input_batch_size,
        max_active_input_batches=args.max_active,
    )
    profiler = cProfile.Profile() if args.profile else None
    start, cpu_start = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    with rare_full_collections():  # as the executors drive the core
        grains = drive(core, args.replicas)
    if profiler:
        profiler.disable()
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    assert grains == args.sources * args.children, grains
    rate, cpu_rate = grains / elapsed, grains / cpu
    if args.json:
        print(
            json.dumps(
                {
                    "grains": grains,
                    "seconds": round(elapsed, 3),
                    "cpu_seconds": round(cpu, 3),
                    "grains_per_s": round(rate),
                    "grains_per_cpu_s": round(cpu_rate),
                }
            )
        )
    else:
        print(
            f"{grains:,} Grains in {elapsed:.2f} s ({cpu:.2f} s of CPU): {rate:,.0f} Grains/s, "
            f"{cpu_rate:,.0f} Grains per CPU second ({args.sources:,} sources x "
            f"{args.children} children, batch {args.batch_size})"
        )
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
