"""The run driver's start on a loopback head, split by the phases it announces.

    python -m benchmarks.driver_start --runs 5

Starts one 2-CPU loopback Ray head (``start_local_head``, token auth, the repository
and ``dags_examples`` on its ``PYTHONPATH``), writes ``--docs`` text documents and,
per run, a plan of ``rayorch_example_pipelines:TextDocPipeline`` with the Airflow-path
benchmark's settings (``read_files``, the light stages in one process, microbatches
of ``--batch``, two at a time), and submits the driver through Ray's Jobs API as the
operator does (``python -m airflow_provider_rayorch.job --run-store ... --run-id ...``).
From each job's log it reads the driver's start phases (``RAYORCH_EVENT {"event":
"start_phase", "phase": ...}``), from Ray's job table the job's start, and from the run store
the first microbatch's commit. One run warms the head up first and is not counted;
the figures are medians of ``--runs``. ``--share-process ""`` gives each stage its
own process. The result is printed as JSON (and written to ``--out`` when given).

    python -m benchmarks.driver_start --runs 5 --trees /tmp/before,/tmp/after

compares the driver's code of source trees (exports of two commits) in one window, on
one head: the runs alternate between the trees, each job's driver running in its tree
(its working directory and ``PYTHONPATH``; its actors import from the head's
``PYTHONPATH``, the tree this runs from, so only changes to driver-side code compare);
the medians are per tree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests

from benchmarks.airflow_path.split import start_marks

if TYPE_CHECKING:
    from benchmarks.sizes import Size

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "dags_examples"
PIPELINE = "rayorch_example_pipelines:TextDocPipeline"
#: The spans reported, each from one moment to the next (seconds).
SPANS = {
    "supervisor": ("job", "process"),
    "imports": ("process", "imported"),
    "pools": ("imported", "pools"),
    "first_batch": ("pools", "dispatch"),
    "process_to_dispatch": ("process", "dispatch"),
    "job_to_first_commit": ("job", "commit"),
}


def _headers(head: dict[str, Any]) -> dict[str, str]:
    token = Path(head["token_path"]).read_text().strip()
    return {"Authorization": f"Bearer {token}"}


def plan_run(store: Any, run_id: str, paths: list[str], args: argparse.Namespace) -> None:
    """Write the run's plan record as the operator would."""
    from rayorch_example_pipelines import TextDocPipeline

    from airflow_provider_rayorch.runs.store import PlanRecord

    kwargs = {"read_files": True, "share_process": args.share_process or None}
    store.write_plan(
        PlanRecord(
            run_id=run_id,
            pipeline=PIPELINE,
            fingerprint=TextDocPipeline(**kwargs).compile().fingerprint,
            sources=paths,
            input_batch_size=args.batch,
            max_active_input_batches=2,
            pipeline_kwargs=kwargs,
        )
    )


def run_job(
    head: dict[str, Any], store_uri: str, run_id: str, timeout: float, tree: str | None = None
) -> dict[str, Any]:
    """Submit the driver for ``run_id`` (from source ``tree`` when given), wait for its
    end; its info and its log."""
    api, headers = str(head["address"]), _headers(head)
    entrypoint = f"{sys.executable} -m airflow_provider_rayorch.job"
    body: dict[str, Any] = {
        "entrypoint": f"{entrypoint} --run-store {store_uri} --run-id {run_id}",
        "submission_id": run_id,
    }
    if tree is not None:  # the driver's code only: its actors import the head's
        path = os.pathsep.join([tree, os.path.join(tree, "dags_examples")])
        # from the tree: the job's working directory comes first on the driver's path
        body["entrypoint"] = f"cd {tree} && PYTHONPATH={path} {body['entrypoint']}"
    requests.post(f"{api}/api/jobs/", json=body, headers=headers, timeout=30).raise_for_status()
    deadline = time.monotonic() + timeout
    while True:
        info = requests.get(f"{api}/api/jobs/{run_id}", headers=headers, timeout=30).json()
        if info["status"] in ("SUCCEEDED", "FAILED", "STOPPED"):
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {run_id} still {info['status']} after {timeout:.0f} s")
        time.sleep(0.5)
    logs = requests.get(f"{api}/api/jobs/{run_id}/logs", headers=headers, timeout=30).json()
    return {"info": info, "logs": str(logs.get("logs") or "")}


def measure_run(
    head: dict[str, Any],
    root: Path,
    paths: list[str],
    run_id: str,
    args: Any,
    tree: str | None = None,
) -> dict[str, Any]:
    """One run's moments (epoch seconds) and spans."""
    from airflow_provider_rayorch.runs.store import RunStore

    store = RunStore(str(root / "runs"))
    plan_run(store, run_id, paths, args)
    job = run_job(head, store.uri, run_id, args.timeout, tree)
    if job["info"]["status"] != "SUCCEEDED":
        raise RuntimeError(f"job {run_id} ended {job['info']['status']}:\n{job['logs'][-3000:]}")
    moments = {"job": job["info"]["start_time"] / 1000.0, **start_marks(job["logs"])}
    first = store.manifest_record(run_id, 0)
    if first is None or not first.committed_at:
        raise RuntimeError(f"job {run_id} succeeded without a committed microbatch 0")
    moments["commit"] = datetime.fromisoformat(first.committed_at).timestamp()
    spans = {k: round(moments[b] - moments[a], 3) for k, (a, b) in SPANS.items()}
    return {"run_id": run_id, "moments": moments, "spans": spans}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="counted runs (medians)")
    parser.add_argument("--docs", type=int, default=24, help="documents per run")
    parser.add_argument("--batch", type=int, default=8, help="documents per microbatch")
    parser.add_argument("--share-process", default="text", help='"" : a process per stage')
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per job")
    parser.add_argument("--trees", default="", help="comma-separated source trees to compare")
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    sys.path[:0] = [str(EXAMPLES), str(ROOT)]
    from airflow_provider_rayorch.operators.local_head import start_local_head, stop_local_head
    from benchmarks.airflow_path.work import write_documents

    root = Path(tempfile.mkdtemp(prefix="driver-start-"))
    paths = write_documents(str(root / "inputs"), args.docs)
    pythonpath = os.pathsep.join([str(EXAMPLES), str(ROOT)])
    load = os.getloadavg()
    head = start_local_head(num_cpus=2, env={"PYTHONPATH": pythonpath})
    try:
        stamp = f"{int(time.time())}"
        warm = measure_run(head, root, paths, f"warm-{stamp}", args)
        trees: list[str | None] = [t for t in args.trees.split(",") if t] or [None]
        runs: dict[str | None, list[dict[str, Any]]] = {t: [] for t in trees}
        for i in range(args.runs):
            for k, tree in enumerate(trees):
                run = measure_run(head, root, paths, f"run{i}-{k}-{stamp}", args, tree)
                runs[tree].append(run)
    finally:
        stop_local_head(head)
    result = {
        "command": "python -m benchmarks.driver_start " + " ".join(argv or sys.argv[1:]),
        "warm_up": warm["spans"],
        "loadavg": {"start": list(load), "end": list(os.getloadavg())},
    }
    for tree, done in runs.items():
        medians = {k: round(statistics.median(r["spans"][k] for r in done), 3) for k in SPANS}
        figures = {"medians_s": medians, "runs": [r["spans"] for r in done]}
        if tree is None:
            result.update(figures)
        else:
            result.setdefault("trees", {})[tree] = figures
    text = json.dumps(result, indent=1, sort_keys=True)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return result


def run_section(spec: Size, results: dict[str, Any], systems: tuple[str, ...] | None = None) -> Any:
    """The suite's entry: five counted runs on one head. Not at the smoke size (a head
    and six jobs, a minute and more): run ``python -m benchmarks.driver_start --runs 1``
    alone there."""
    if spec.rounds <= 1:
        return {"skipped": "not at this size: run `python -m benchmarks.driver_start --runs 1`"}
    return main(["--runs", "5"])


if __name__ == "__main__":
    main()
