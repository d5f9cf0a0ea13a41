"""Synthetic runs in a local run store, for the report and plugin tests."""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING, Any

# Airflow reads AIRFLOW_HOME when first imported (the plugin tests import it).
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="rayorch-unit-airflow-"))

import pytest

from airflow_provider_rayorch.rayorch.summary import microbatch_summary, run_summary
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

if TYPE_CHECKING:
    from pathlib import Path

RUN = "dag.task.0123456789abcdef"
SOURCES = [f"doc-{i}.pdf" for i in range(10)]
#: source -> (outcome, cause) for the non-present rows.
ISSUES = {
    3: ("failed", "doc[3]: cannot open <pdf> & friends"),
    5: ("suppressed", "doc[5]/page[2]: blank"),
    8: ("dropped", None),
}


def make_run(
    root: Path,
    *,
    committed: tuple[int, ...] = (0, 1, 2),
    finished: bool = True,
    max_failed_ratio: float = 0.5,
    run_id: str = RUN,
    sources: list[str] | None = None,
    issues: dict[int, tuple[str, str | None]] | None = None,
    pipeline: str = "pkg.mod:Docs",
) -> RunStore:
    """10 sources in microbatches of 4 (0-3, 4-7, 8-9), the given ones committed."""
    issues = ISSUES if issues is None else issues
    store = RunStore(str(root))
    plan = PlanRecord(
        run_id=run_id,
        pipeline=pipeline,
        fingerprint="f" * 64,
        sources=SOURCES if sources is None else sources,
        input_batch_size=4,
        max_failed_ratio=max_failed_ratio,
    )
    store.write_plan(plan)
    for d in plan.microbatches():
        if d["index"] not in committed:
            continue
        first, count = d["first_source"], d["count"]
        rows: list[tuple[str, str | None, Any]] = []
        counts = dict.fromkeys(("present", "dropped", "failed", "suppressed"), 0)
        failures = []
        for s in range(first, first + count):
            outcome, cause = issues.get(s, ("present", None))
            counts[outcome] += 1
            rows.append((outcome, cause, {"text": f"t{s}"} if outcome == "present" else None))
            if outcome in ("failed", "suppressed"):
                failures.append({"source": s, "outcome": outcome, "cause": cause})
        store.write_outputs(run_id, d["index"], "out", first, rows)
        manifest = microbatch_summary(
            index=d["index"],
            first_source=first,
            count=count,
            outcome_counts=counts,
            entities={"doc": count},
            grains={"dispatched": 3 * count, "retried": d["index"], "suppressed": 0},
            failures=failures,
            elapsed_s=0.5 + d["index"],
            run_id=run_id,
            pipeline=plan.pipeline,
            fingerprint=plan.fingerprint,
            outputs_uri=store.outputs_uri(run_id, d["index"]),
        )
        manifest["outputs"]["ports"] = ["out"]
        store.commit_microbatch(run_id, d["index"], manifest)
    if finished:
        store.write_run_manifest(
            run_id,
            run_summary(
                [m.to_dict() for m in store.manifest_records(run_id)],
                elapsed_s=4.25,
                run_id=run_id,
                max_failed_ratio=0.5,
            ),
        )
    return store


def make_timeline() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Two Calls: ``ocr`` on two actors (w1 busy 0-2 s of a 4 s run, w2 1-2 s), ``asm`` on one."""
    timeline: list[dict[str, Any]] = [
        {
            "event": "dispatch",
            "t": 0.0,
            "call": "ocr",
            "worker": "w1",
            "batch": 1,
            "size": 4,
            "queued": 7,
        },
        {
            "event": "dispatch",
            "t": 1.0,
            "call": "ocr",
            "worker": "w2",
            "batch": 2,
            "size": 2,
            "queued": 3,
        },
        {
            "event": "report",
            "t": 2.0,
            "call": "ocr",
            "worker": "w1",
            "batch": 1,
            "busy_s": 2.0,
            "outcome": "finished",
        },
        {
            "event": "report",
            "t": 2.0,
            "call": "ocr",
            "worker": "w2",
            "batch": 2,
            "busy_s": 1.0,
            "outcome": "raised",
        },
        {
            "event": "dispatch",
            "t": 2.5,
            "call": "asm",
            "worker": "w3",
            "batch": 3,
            "size": 1,
            "queued": 0,
        },
        {
            "event": "report",
            "t": 4.0,
            "call": "asm",
            "worker": "w3",
            "batch": 3,
            "busy_s": 0.5,
            "outcome": "finished",
        },
    ]
    calls = [
        {
            "name": "ocr",
            "replicas": 2,
            "rpcs": 2,
            "grains_dispatched": 6,
            "batch_size": 4,
            "batch_sizes": {"2": 1, "4": 1},
            "mean_batch": 3.0,
            "retries": 1,
            "suppressed": 0,
            "failed": 0,
            "busy_s": 3.0,
            "queue_wait_s": 0.5,
        },
        {
            "name": "asm",
            "replicas": 1,
            "rpcs": 1,
            "grains_dispatched": 1,
            "batch_size": 4,
            "batch_sizes": {"1": 1},
            "mean_batch": 1.0,
            "retries": 0,
            "suppressed": 0,
            "failed": 0,
            "busy_s": 0.5,
            "queue_wait_s": 0.0,
        },
    ]
    timings = [
        {"index": 0, "started_s": 0.0, "finished_s": 1.5},
        {"index": 1, "started_s": 0.5, "finished_s": 3.0},
        {"index": 2, "started_s": 2.0, "finished_s": 4.0},
    ]
    return timeline, calls, timings


@pytest.fixture
def run_store(tmp_path: Path) -> RunStore:
    return make_run(tmp_path / "runs")
