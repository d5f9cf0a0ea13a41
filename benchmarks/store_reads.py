"""Run-store reads against the number of sources: one microbatch's outputs, a run's state.

    python -m benchmarks.store_reads --sources 50000 500000

For each ``--sources`` count it writes a tiny run straight into a temporary run store
(a plan record, then one output file and manifest per microbatch of
``--input-batch-size`` int sources, then its run manifest; no engine), then prints the seconds
``read_summary_outputs`` takes on one microbatch's summary (the median of
``--repeat``), the seconds ``read_run_state`` takes, and the size of ``plan.json``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from typing import TYPE_CHECKING

from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.run_state import read_run_state
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore, read_summary_outputs

if TYPE_CHECKING:
    from collections.abc import Callable


def write_run(store: RunStore, run_id: str, n: int, size: int) -> dict[str, object]:
    """A committed run of ``n`` sources; returns the middle microbatch's manifest."""
    plan = PlanRecord(
        run_id=run_id,
        pipeline="m:F",
        fingerprint="f" * 64,
        sources=[f"s3://bucket/in/{i:08d}.pdf" for i in range(n)],
        input_batch_size=size,
    )
    store.write_plan(plan)
    middle: dict[str, object] = {}
    for mb in plan.microbatches():
        index = mb["index"]
        commit_present_microbatch(store, run_id, index, mb["first_source"], mb["count"])
        if index == len(plan.microbatches()) // 2:
            middle = plain(store.manifest_record(run_id, index)) or {}
    store.write_run_manifest(run_id, {"run_id": run_id, "state": "success"})
    return middle


def commit_present_microbatch(
    store: RunStore, run_id: str, index: int, first: int, count: int
) -> None:
    """Commit microbatch ``index`` (sources ``first`` to ``first + count - 1``), every
    source present with its number as the value, on port ``out``."""
    rows = [("present", None, first + i) for i in range(count)]
    uri = store.write_outputs(run_id, index, "out", first, rows)
    manifest = {
        "run_id": run_id,
        "state": "success",
        "microbatch": {"index": index, "first_source": first, "count": count},
        "sources": {"total": count, "present": count, "dropped": 0, "failed": 0, "suppressed": 0},
        "outputs": {"uri": store.outputs_uri(run_id, index), "rows": count, "ports": ["out"]},
        "attempt": 1,
        "files": {"out": uri},
    }
    store.commit_microbatch(run_id, index, manifest)


def seconds(fn: Callable[..., object], repeat: int, *args: object) -> float:
    """The median seconds ``fn(*args)`` takes over ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, nargs="+", default=[50_000, 500_000])
    parser.add_argument("--input-batch-size", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for n in args.sources:
        with tempfile.TemporaryDirectory() as root:
            store = RunStore(root)
            summary = write_run(store, "run", n, args.input_batch_size)
            rows = read_summary_outputs(summary)
            one = seconds(read_summary_outputs, args.repeat, summary)
            state = seconds(read_run_state, args.repeat, store, "run")
            plan_bytes = len(store.read_bytes(("run", "plan.json")) or b"")
            print(
                f"sources={n} rows={len(rows)} read_summary_outputs={one:.4f}s "
                f"read_run_state={state:.4f}s plan.json={plan_bytes}B"
            )


if __name__ == "__main__":
    main()
