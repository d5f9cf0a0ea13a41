"""One DAG run of the benchmark, measured from facts, never from the harness's waits.

Times come from the Airflow REST API (the run's ``queued_at`` when the trigger created
it, its ``end_date``, each task instance's start and end), from the run store (each
microbatch manifest's ``committed_at``; the run manifest's file time), from Ray's job
table (the job's or the driver's ``start_time``/``end_time``), and for Ray Data from
its output files' modification times. All are wall-clock seconds on this machine.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .deployment import wait

if TYPE_CHECKING:
    from .deployment import Bench

__all__ = ["VARIANTS", "measure_run", "ts"]

#: Variant -> (DAG id, the task that submits or runs the work).
VARIANTS = {
    "RayOrchOperator": ("ap_operator", "prepare"),
    "microbatch pattern": ("ap_microbatch", "prepare.submit"),
    "@task + Ray Data": ("ap_raydata", "prepare"),
}


def ts(value: str | None) -> float | None:
    """An ISO 8601 time (Airflow's, or a manifest's) as epoch seconds."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _span(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(b - a, 3)


def _tis(bench: Bench, dag_id: str, run_id: str) -> dict[str, list[dict[str, Any]]]:
    assert bench.rest is not None
    found: dict[str, list[dict[str, Any]]] = {}
    for ti in bench.rest.task_instances(dag_id, run_id):
        found.setdefault(ti["task_id"], []).append(ti)
    return found


def _first(tis: list[dict[str, Any]] | None, key: str, pick: Any = min) -> float | None:
    times = [t for t in (ts(ti.get(key)) for ti in tis or []) if t is not None]
    return pick(times) if times else None


def _rayorch_facts(bench: Bench, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
    from airflow_provider_rayorch.runs.store import RunStore

    assert bench.rest is not None
    rest = bench.rest
    rid = rest.xcom(dag_id, run_id, task_id, "rayorch_run_id")
    job_id = rest.xcom(dag_id, run_id, task_id, "rayorch_job_id")
    store = RunStore(str(rest.xcom(dag_id, run_id, task_id, "rayorch_run_store")))
    manifests = [m.to_dict() for m in store.manifest_records(rid)]
    commits = sorted(ts(m.get("committed_at")) or 0.0 for m in manifests)
    run_json, report = Path(store.root) / rid / "run.json", Path(store.root) / rid / "report.html"
    job = bench.ray_job(job_id) or {}
    return {
        "job_start": (job.get("start_time") or 0) / 1000 or None,
        "job_end": (job.get("end_time") or 0) / 1000 or None,
        "first_commit": commits[0] if commits else None,
        "last_commit": commits[-1] if commits else None,
        "run_manifest": run_json.stat().st_mtime if run_json.exists() else None,
        "report": report.stat().st_mtime if report.exists() else None,
        "microbatches": len(commits),
    }


def _raydata_facts(bench: Bench, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
    assert bench.rest is not None
    result = bench.rest.xcom(dag_id, run_id, task_id)
    run = "".join(c if c.isalnum() else "_" for c in run_id)
    files = list((bench.root / "out" / "raydata" / run).glob("*.parquet"))
    times = sorted(f.stat().st_mtime for f in files)
    job = bench.ray_job(str(result["ray_job_id"])) or {}
    return {
        "job_start": (job.get("start_time") or 0) / 1000 or None,
        "job_end": (job.get("end_time") or 0) / 1000 or None,
        "first_commit": times[0] if times else None,
        "last_commit": times[-1] if times else None,
        "output_files": len(files),
    }


def measure_run(bench: Bench, variant: str, *, timeout: float = 600) -> dict[str, Any]:
    """Trigger ``variant``'s DAG, wait for its run to end, and return its figures
    (seconds) and the facts they come from (epoch seconds)."""
    assert bench.rest is not None
    rest = bench.rest
    dag_id, task_id = VARIANTS[variant]
    run_id = rest.trigger(dag_id)["dag_run_id"]
    run = wait(
        lambda: (r := rest.run(dag_id, run_id))["state"] in ("success", "failed") and r,
        timeout,
        f"{dag_id} run {run_id}",
    )
    tis = _tis(bench, dag_id, run_id)
    facts: dict[str, Any] = {
        "trigger": ts(run.get("queued_at")),
        "run_start": ts(run.get("start_date")),
        "success": ts(run.get("end_date")),
        "first_task_start": _first(tis.get(task_id), "start_date"),
        "task_end": _first(tis.get(task_id), "end_date", max),
    }
    if run["state"] != "success":
        states = {k: [t["state"] for t in v] for k, v in tis.items()}
        return {"variant": variant, "run_id": run_id, "state": run["state"], "tasks": states}
    gather = _raydata_facts if variant == "@task + Ray Data" else _rayorch_facts
    facts.update(gather(bench, dag_id, run_id, task_id))
    if variant == "microbatch pattern":
        sensors = tis.get("prepare.microbatch")
        facts["first_sensor_end"] = _first(sensors, "end_date")
        facts["run_sensor_end"] = _first(tis.get("prepare.run"), "end_date")
    t0 = facts["trigger"]
    figures = {
        "trigger_to_first_commit_s": _span(t0, facts["first_commit"]),
        "trigger_to_job_start_s": _span(t0, facts["job_start"]),
        "last_commit_to_success_s": _span(facts["last_commit"], facts["success"]),
        "total_s": _span(t0, facts["success"]),
        # where the fixed cost goes
        "trigger_to_task_start_s": _span(t0, facts["first_task_start"]),
        "task_start_to_job_start_s": _span(facts["first_task_start"], facts["job_start"]),
        "job_start_to_first_commit_s": _span(facts["job_start"], facts["first_commit"]),
        "first_to_last_commit_s": _span(facts["first_commit"], facts["last_commit"]),
        "last_commit_to_job_end_s": _span(facts["last_commit"], facts["job_end"]),
        "job_end_to_task_end_s": _span(facts["job_end"], facts["task_end"]),
        # the driver's tail: executor shut down and run manifest, report, exit
        "last_commit_to_run_manifest_s": _span(facts["last_commit"], facts.get("run_manifest")),
        "run_manifest_to_report_s": _span(facts.get("run_manifest"), facts.get("report")),
        "report_to_job_end_s": _span(facts.get("report"), facts["job_end"]),
        "task_end_to_success_s": _span(facts["task_end"], facts["success"]),
    }
    if variant == "microbatch pattern":
        figures["first_commit_to_sensor_s"] = _span(
            facts["first_commit"], facts["first_sensor_end"]
        )
        # the submit task ended long before: the run sensor is the task that waits
        figures["job_end_to_task_end_s"] = _span(facts["job_end"], facts["run_sensor_end"])
        figures["task_end_to_success_s"] = _span(facts["run_sensor_end"], facts["success"])
    return {"variant": variant, "run_id": run_id, "state": "success", "figures": figures,
            "facts": facts}  # fmt: skip


def load() -> list[float]:
    """The load average now (recorded beside each section)."""
    return [round(x, 2) for x in os.getloadavg()]
