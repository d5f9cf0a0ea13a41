"""Driver memory over a run's length: peak RSS when tiny sources stream through.

    python -m benchmarks.driver_memory --backend local --sources 1000000

``--sources`` ints go through a three-stage expand/reduce pipeline (a source n
becomes n % 3 pages, each page is doubled, the pages' sum joins the source) in
microbatches of ``--input-batch-size``, ``--max-active`` at a time, the way the
Ray job's driver streams them (``Executor.stream``); each microbatch is dropped
as soon as it is seen. It prints the process's RSS before the run and its peak
RSS at the end (``ru_maxrss``, a high-water mark), and the engine objects still
alive after the run. ``--backend ray`` starts a 2-CPU local Ray of its own.

    python -m benchmarks.driver_memory --job /tmp/store --backend ray --sources 1000000

``--job STORE`` goes the whole Ray job's way instead: it writes a plan record into
the run store ``STORE`` and runs the job's entrypoint (``python -m
airflow_provider_rayorch.job``: the driver, its commits, manifests and report) as a
process of its own, as a head's job supervisor starts it, then prints that process's
peak RSS (``benchmarks.scale.run_job_process``: read from ``wait4``, not from this
process, whose peak holds the plan it wrote).
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import time
from collections import Counter
from typing import Any

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.execution.remote_values import Box, RemoteValue
from airflow_provider_rayorch.rayorch.runtime.lineage import Entity
from airflow_provider_rayorch.rayorch.runtime.state import Microbatch
from benchmarks.expand_reduce import Tiny
from benchmarks.stream_options import add_stream_options


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def live_engine_objects() -> dict[str, int]:
    gc.collect()
    kinds = (Microbatch, Entity, Box, RemoteValue)
    return dict(Counter(type(o).__name__ for o in gc.get_objects() if isinstance(o, kinds)))


def measure(args: argparse.Namespace) -> dict[str, Any]:
    sources = list(range(args.sources))
    if args.backend == "ray":
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    with ro.Executor(Tiny(args.batch_size), backend=args.backend, progress=False) as executor:
        executor.warm_up()
        before = rss_mb()
        started = time.perf_counter()
        seen = 0
        for mb in executor.stream(
            sources,
            input_batch_size=args.input_batch_size,
            max_active_input_batches=args.max_active,
        ):
            seen += mb.count
        elapsed = time.perf_counter() - started
        left = live_engine_objects()
    return {
        "backend": args.backend,
        "sources": seen,
        "input_batch_size": args.input_batch_size,
        "max_active": args.max_active,
        "rss_before_run_mb": round(before, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "elapsed_s": round(elapsed, 1),
        "engine_objects_after_run": left,
    }


def run_job(args: argparse.Namespace) -> dict[str, Any]:
    """Plan the run into ``args.job``, then run the job's entrypoint on it as a process
    of its own; its seconds and its own peak RSS."""
    from airflow_provider_rayorch.runs.store import PlanRecord, RunStore
    from benchmarks.scale import isolated_env, run_job_process

    run_id = f"memory-{args.backend}-{args.sources}"
    RunStore(args.job).write_plan(
        PlanRecord(
            run_id=run_id,
            pipeline=f"{Tiny.__module__}:Tiny",
            fingerprint=Tiny(args.batch_size).compile().fingerprint,
            sources=list(range(args.sources)),
            input_batch_size=args.input_batch_size,
            max_active_input_batches=args.max_active,
            pipeline_kwargs={"batch_size": args.batch_size},
            backend=args.backend,
        )
    )
    elapsed, peak = run_job_process(args.job, run_id, isolated_env())
    return {
        "job": run_id,
        "sources": args.sources,
        "driver_peak_rss_mb": round(peak, 1),
        "elapsed_s": round(elapsed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("local", "ray"), default="local")
    add_stream_options(parser, sources=100_000, input_batch_size=1000)
    parser.add_argument("--job", metavar="STORE", help="run the Ray job's entrypoint")
    args = parser.parse_args()
    print(json.dumps(run_job(args) if args.job else measure(args), sort_keys=True))


if __name__ == "__main__":
    main()
