"""Event-driven ingestion: file landing to committed output, on ``rayorch_events``.

The example DAG as shipped (``dags_examples/rayorch_events.py``: its trigger lists the
inbox every 5 s and announces a file once it has landed; the run selects the files,
finds the machine's shared Ray head (``ray_head``), prepares them with
``RayOrchOperator`` on it, and records them). The section's earlier variants started
that head, so the files land on a running head. Files land one at a time, each after
the previous one's run ended, at a seeded random moment of the trigger's poll cycle:
the latency of a file arriving on an idle deployment. Landing is the moment the file
appears in the glob (a rename); committed is the ``committed_at`` of the microbatch
manifest that holds it.
"""

from __future__ import annotations

import os
import random
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from .deployment import wait
from .facts import driver_logs, ts
from .split import start_marks, start_split

if TYPE_CHECKING:
    from .deployment import Bench

__all__ = ["measure_events"]

DAG_ID = "rayorch_events"
#: The example's poll interval (its RAYORCH_INBOX_POLL_S default).
POLL_S = 5.0


def _land(bench: Bench, name: str) -> float:
    """Write the file under a name outside the glob, rename it in; the landing time."""
    from .work import document_text

    part = bench.inbox / f"{name}.part"
    part.write_text(document_text(len(name)))
    os.replace(part, bench.inbox / name)
    return time.time()


def _run_of(bench: Bench, name: str, seen: set[str]) -> dict[str, Any] | None:
    """The ended run whose ``select_sources`` took ``name``, if any."""
    assert bench.rest is not None
    rest = bench.rest
    for run in rest.runs(DAG_ID):
        rid = run["dag_run_id"]
        if rid in seen or run["state"] not in ("success", "failed"):
            continue
        try:
            sources = rest.xcom(DAG_ID, rid, "select_sources")
        except RuntimeError:  # skipped: it took nothing new
            seen.add(rid)
            continue
        seen.add(rid)
        if any(str(s).endswith(f"/{name}") for s in sources):
            return dict(run)
    return None


def _one(bench: Bench, name: str, landed: float, run: dict[str, Any]) -> dict[str, Any]:
    from airflow_provider_rayorch.runs.store import RunStore

    assert bench.rest is not None
    rest, rid = bench.rest, run["dag_run_id"]
    tis = {t["task_id"]: t for t in rest.task_instances(DAG_ID, rid)}
    prepare, head = tis.get("prepare") or {}, tis.get("ray_head") or {}
    store = RunStore(str(rest.xcom(DAG_ID, rid, "prepare", "rayorch_run_store")))
    run_id = str(rest.xcom(DAG_ID, rid, "prepare", "rayorch_run_id"))
    commits = [ts(m.to_dict().get("committed_at")) for m in store.manifest_records(run_id)]
    committed = max((c for c in commits if c is not None), default=None)
    queued, end = ts(run.get("queued_at")), ts(run.get("end_date"))
    start, stop = ts(prepare.get("start_date")), ts(prepare.get("end_date"))
    # the job on the shared head, and its start as the driver marked it
    info = rest.xcom(DAG_ID, rid, "ray_head")
    job_id = str(rest.xcom(DAG_ID, rid, "prepare", "rayorch_job_id"))
    job_start = ((bench.ray_job(job_id, info) or {}).get("start_time") or 0) / 1000 or None
    marks = start_marks(bench.job_logs(job_id, info), *driver_logs(store, run_id))

    def span(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else round(b - a, 3)

    return {
        "file": name,
        "run_id": rid,
        "state": run["state"],
        "latency_s": span(landed, committed),
        "landing_to_run_queued_s": span(landed, queued),
        "run_queued_to_prepare_start_s": span(queued, start),
        "head_task_s": span(ts(head.get("start_date")), ts(head.get("end_date"))),
        "prepare_start_to_commit_s": span(start, committed),
        "prepare_start_to_job_start_s": span(start, job_start),
        "job_start_to_commit_s": span(job_start, committed),
        **start_split({"job_start": job_start, **marks, "first_commit": committed}),
        "prepare_s": span(start, stop),
        "commit_to_run_success_s": span(committed, end),
    }


def measure_events(
    bench: Bench, files: int, *, warmup: int = 1, seed: int = 21
) -> list[dict[str, Any]]:
    """Land ``warmup`` + ``files`` files one by one; the figures of the last ``files``."""
    assert bench.rest is not None
    bench.rest.set_paused(DAG_ID, False)
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    try:
        for k in range(warmup + files):
            time.sleep(rng.uniform(0.0, POLL_S))  # a random phase of the poll cycle
            name = f"e{k:03d}.txt"
            landed = _land(bench, name)
            try:
                run = wait(
                    partial(_run_of, bench, name, seen), 600, f"the run that took {name}", 1.0
                )
            except TimeoutError:  # reported with the files before it; the rest is not landed
                out.append({"file": name, "state": "timeout", "latency_s": None})
                break
            if k >= warmup:
                out.append(_one(bench, name, landed, run))
    finally:
        bench.rest.set_paused(DAG_ID, True)
    return out
