"""One DAG run of the benchmark, measured from facts, never from the harness's waits.

Times come from the Airflow REST API (the run's ``queued_at`` when the trigger created
it, its ``end_date``, each task instance's start and end), from the run store (each
microbatch manifest's ``committed_at``; the run manifest's file time; the driver's
log), from Ray's Jobs API on the head the job ran on (the job's or the driver's
``start_time``/``end_time``, the job's log with the driver's start marks), and for
Ray Data from its output files' modification times. All are wall-clock seconds on
this machine.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .deployment import wait
from .split import start_marks, start_split

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .deployment import Bench

__all__ = ["VARIANTS", "Kind", "Variant", "driver_logs", "figures", "measure_run", "ts"]


class Kind(enum.Enum):
    """How a variant runs the work, and so which facts it has."""

    OPERATOR = "operator"
    PATTERN = "pattern"
    RAY_DATA = "ray data"


@dataclass(frozen=True)
class Variant:
    """A variant's DAG, the task that submits or runs the work, and its head task
    (the shared head's, else None: the connection's head)."""

    dag_id: str
    task_id: str
    kind: Kind
    head_task: str | None = None


OPERATOR, PATTERN = "RayOrchOperator", "microbatch pattern"
RAY_DATA, RAY_DATA_GROUPBY = "@task + Ray Data", "@task + Ray Data + groupby"
#: Variant -> its DAG (benchmarks/airflow_path/dags), in the order each round runs them.
VARIANTS = {
    OPERATOR: Variant("ap_operator", "prepare", Kind.OPERATOR),
    PATTERN: Variant("ap_microbatch", "prepare.submit", Kind.PATTERN),
    "pattern, end_from_trigger off": Variant(
        "ap_microbatch_resume", "prepare.submit", Kind.PATTERN
    ),
    "RayOrchOperator, shared head": Variant(
        "ap_operator_shared", "prepare", Kind.OPERATOR, "ray_head"
    ),
    "pattern, shared head": Variant(
        "ap_microbatch_shared", "prepare.submit", Kind.PATTERN, "prepare.ray_head"
    ),
    RAY_DATA: Variant("ap_raydata", "prepare", Kind.RAY_DATA),
    RAY_DATA_GROUPBY: Variant("ap_raydata_groupby", "prepare", Kind.RAY_DATA),
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


def _job_times(job: Mapping[str, Any]) -> dict[str, float | None]:
    return {
        "job_start": (job.get("start_time") or 0) / 1000 or None,
        "job_end": (job.get("end_time") or 0) / 1000 or None,
    }


def driver_logs(store: Any, run_id: str) -> list[str]:
    """The texts of the run's driver logs the run store keeps."""
    import posixpath

    from airflow_provider_rayorch.runs import paths
    from airflow_provider_rayorch.runs.driver_log import driver_log_names

    texts = []
    for name in driver_log_names(store, run_id):
        with store.fs.open_input_file(
            posixpath.join(store.root, *paths.driver_logs(run_id), name)
        ) as f:
            texts.append(bytes(f.read()).decode("utf-8", "replace"))
    return texts


def _rayorch_facts(
    bench: Bench, dag_id: str, run_id: str, task_id: str, head: Mapping[str, Any] | None
) -> dict[str, Any]:
    from airflow_provider_rayorch.runs.store import RunStore

    assert bench.rest is not None
    rest = bench.rest
    rid = rest.xcom(dag_id, run_id, task_id, "rayorch_run_id")
    job_id = rest.xcom(dag_id, run_id, task_id, "rayorch_job_id")
    store = RunStore(str(rest.xcom(dag_id, run_id, task_id, "rayorch_run_store")))
    manifests = [m.to_dict() for m in store.manifest_records(rid)]
    commits = sorted(ts(m.get("committed_at")) or 0.0 for m in manifests)
    run_json, report = Path(store.root) / rid / "run.json", Path(store.root) / rid / "report.html"
    marks = start_marks(bench.job_logs(job_id, head), *driver_logs(store, rid))
    return {
        **_job_times(bench.ray_job(job_id, head) or {}),
        **marks,
        "first_commit": commits[0] if commits else None,
        "last_commit": commits[-1] if commits else None,
        "run_manifest": run_json.stat().st_mtime if run_json.exists() else None,
        "report": report.stat().st_mtime if report.exists() else None,
        "microbatches": len(commits),
    }


def _raydata_facts(
    bench: Bench, dag_id: str, run_id: str, task_id: str, head: Mapping[str, Any] | None
) -> dict[str, Any]:
    from .work import output_folder

    assert bench.rest is not None
    result = bench.rest.xcom(dag_id, run_id, task_id)
    files = list(Path(output_folder(str(bench.root / "out"), dag_id, run_id)).glob("*.parquet"))
    times = sorted(f.stat().st_mtime for f in files)
    return {
        **_job_times(bench.ray_job(str(result["ray_job_id"]), head) or {}),
        "first_commit": times[0] if times else None,
        "last_commit": times[-1] if times else None,
        "output_files": len(files),
    }


def figures(kind: Kind, facts: Mapping[str, Any]) -> dict[str, float | None]:
    """A run's figures (seconds) from its facts (epoch seconds)."""
    t0 = facts["trigger"]
    out = {
        "trigger_to_first_commit_s": _span(t0, facts["first_commit"]),
        "trigger_to_job_start_s": _span(t0, facts["job_start"]),
        "last_commit_to_success_s": _span(facts["last_commit"], facts["success"]),
        "total_s": _span(t0, facts["success"]),
        # where the fixed cost goes
        "trigger_to_task_start_s": _span(t0, facts["first_task_start"]),
        "task_start_to_job_start_s": _span(facts["first_task_start"], facts["job_start"]),
        "head_task_s": _span(facts.get("head_task_start"), facts.get("head_task_end")),
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
    if kind is not Kind.RAY_DATA:
        out.update(start_split(dict(facts)))
    if kind is Kind.PATTERN:
        out["first_commit_to_sensor_s"] = _span(facts["first_commit"], facts["first_sensor_end"])
        # the submit task ended long before: the run sensor is the task that waits
        out["job_end_to_task_end_s"] = _span(facts["job_end"], facts["run_sensor_end"])
        out["task_end_to_success_s"] = _span(facts["run_sensor_end"], facts["success"])
    return out


def measure_run(bench: Bench, variant: str, *, timeout: float = 600) -> dict[str, Any]:
    """Trigger ``variant``'s DAG, wait for its run to end, and return its figures
    (seconds) and the facts they come from (epoch seconds)."""
    assert bench.rest is not None
    rest = bench.rest
    v = VARIANTS[variant]
    run_id = rest.trigger(v.dag_id)["dag_run_id"]
    run = wait(
        lambda: (r := rest.run(v.dag_id, run_id))["state"] in ("success", "failed") and r,
        timeout,
        f"{v.dag_id} run {run_id}",
    )
    tis = _tis(bench, v.dag_id, run_id)
    first_task = v.head_task or v.task_id
    facts: dict[str, Any] = {
        "trigger": ts(run.get("queued_at")),
        "run_start": ts(run.get("start_date")),
        "success": ts(run.get("end_date")),
        "first_task_start": _first(tis.get(first_task), "start_date"),
        "task_end": _first(tis.get(v.task_id), "end_date", max),
    }
    if run["state"] != "success":
        states = {k: [t["state"] for t in x] for k, x in tis.items()}
        return {"variant": variant, "run_id": run_id, "state": run["state"], "tasks": states}
    head = None
    if v.head_task:
        head = rest.xcom(v.dag_id, run_id, v.head_task)
        facts["head_task_start"] = _first(tis.get(v.head_task), "start_date")
        facts["head_task_end"] = _first(tis.get(v.head_task), "end_date", max)
    gather = _raydata_facts if v.kind is Kind.RAY_DATA else _rayorch_facts
    facts.update(gather(bench, v.dag_id, run_id, v.task_id, head))
    if v.kind is Kind.PATTERN:
        group = v.task_id.rpartition(".")[0]
        facts["first_sensor_end"] = _first(tis.get(f"{group}.microbatch"), "end_date")
        facts["run_sensor_end"] = _first(tis.get(f"{group}.run"), "end_date")
    return {"variant": variant, "run_id": run_id, "state": "success",
            "figures": figures(v.kind, facts), "facts": facts}  # fmt: skip


def load() -> list[float]:
    """The load average now (recorded beside each section)."""
    return [round(x, 2) for x in os.getloadavg()]
