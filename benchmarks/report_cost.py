"""Time one run report at N committed microbatches: from the store (every manifest and
output file, as the plugin's page and a repair render it) and from the driver's running
aggregate (the live report). No Ray: a synthetic run of N microbatches of 8 sources.

    .venv/bin/python -m benchmarks.report_cost 250 4000
"""

from __future__ import annotations

import sys
import tempfile
import time

from airflow_provider_rayorch.rayorch.summary import microbatch_summary
from airflow_provider_rayorch.reports import write_run_report
from airflow_provider_rayorch.runs.aggregate import RunAggregate, sample_of
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

SIZE = 8


def committed_run(root: str, microbatches: int) -> tuple[RunStore, PlanRecord]:
    """A run store holding ``microbatches`` committed microbatches (source 3 of each fails)."""
    store = RunStore(root)
    plan = PlanRecord(
        run_id="run",
        pipeline="pkg.mod:Docs",
        fingerprint="f" * 64,
        sources=[f"doc-{i}.pdf" for i in range(SIZE * microbatches)],
        input_batch_size=SIZE,
        max_failed_ratio=1.0,
    )
    store.write_plan(plan)
    for d in plan.microbatches():
        first, count = d["first_source"], d["count"]
        rows = [
            ("failed", "doc: bad", None) if s % SIZE == 3 else ("present", None, s)
            for s in range(first, first + count)
        ]
        files = {"out": store.write_outputs("run", d["index"], "out", first, rows)}
        manifest = microbatch_summary(
            index=d["index"],
            first_source=first,
            count=count,
            outcome_counts={"present": count - 1, "dropped": 0, "failed": 1, "suppressed": 0},
            entities={"doc": count},
            grains={"dispatched": count, "retried": 0, "suppressed": 0},
            failures=[{"source": first + 3, "outcome": "failed", "cause": "doc: bad"}],
            elapsed_s=0.1,
            run_id="run",
            outputs_uri=store.outputs_uri("run", d["index"]),
        )
        manifest["outputs"]["ports"] = ["out"]
        manifest.update(attempt=1, files=files)
        manifest["sample"] = sample_of({"out": rows}, range(first, first + count))
        store.commit_microbatch("run", d["index"], manifest)
    return store, store.read_plan("run") or plan


def main(argv: list[str]) -> None:
    for n in [int(a) for a in argv] or [250, 4000]:
        with tempfile.TemporaryDirectory() as root:
            store, plan = committed_run(root, n)
            timings = [
                {"index": i, "started_s": 0.1 * i, "finished_s": 0.1 * i + 0.1} for i in range(n)
            ]
            aggregate = RunAggregate.of(plan, store.manifest_records("run"))
            t0 = time.perf_counter()
            write_run_report(store, "run", microbatches=timings)
            t1 = time.perf_counter()
            write_run_report(store, "run", microbatches=timings, live=aggregate.snapshot())
            t2 = time.perf_counter()
            print(
                f"{n} committed microbatches: report from the store {t1 - t0:.2f} s, "
                f"from the driver's aggregate {t2 - t1:.2f} s",
                flush=True,
            )


if __name__ == "__main__":
    main(sys.argv[1:])
