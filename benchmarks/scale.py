"""Scale: tiny sources through the provider, each run in a fresh process.

    python -m benchmarks.suite --only scale --merge          # the suite's section
    python -m benchmarks.scale --sources 10000000 --paths operator --out docs/benchmarks

Tiny sources (``benchmarks.expand_reduce:Tiny``: the provider's own cost dominates)
run in microbatches of 1,000 two ways, each from a fresh process: through
``RayOrchOperator.execute`` with no connection (the embedded driver: a child process
with a private 2-CPU local Ray), and through the job entrypoint as a head runs a
job (the plan written first; ``python -m airflow_provider_rayorch.job`` in a process
of its own, joined by ``RAY_ADDRESS`` to a 2-CPU local Ray the fresh process starts
and stops). Each run gives its seconds per 1,000 sources and the driver's peak RSS,
the driver process's own (the embedded driver's ``VmHWM``, read while it runs; the
job process's ``ru_maxrss``, from ``wait4``). The fresh process then reads the
finished run's store:
bytes per source, one report (rendered from the store, as a repair or the plugin
does, and from the driver's aggregate, as the live report), one microbatch's
read-back (``read_summary_outputs``) and the runs page (the plugin's state read and
table for that run); the reports and the runs page are the median of 5.
:mod:`.scale_triggers` measures waiting microbatch triggers.
The CLI adds its points to the ``scale`` section of ``--out``/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.measure import child_result

__all__ = ["PATHS", "isolated_env", "measure_point", "run_job_process", "run_section"]

REPO = Path(__file__).resolve().parent.parent
PIPELINE = "benchmarks.expand_reduce:Tiny"
#: the Ray job's entrypoint, run as a head runs it
JOB_MODULE = "airflow_provider_rayorch.job"
PATHS = ("operator", "job")
MICROBATCH = 1000
CALL_BATCH = 256
#: a point's own process: generous, a 10M run through the operator takes hours
POINT_TIMEOUT_S = 6 * 3600


def isolated_env() -> dict[str, str]:
    """A point's environment: the repository importable (by Ray workers too), no
    connection or Ray address inherited from this shell."""
    drop = ("AIRFLOW_CONN_RAYORCH_DEFAULT", "RAY_ADDRESS")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    paths = [str(REPO), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def _child(args: list[str]) -> dict[str, Any]:
    """Run ``python -m benchmarks.scale <args>`` in a fresh process; its last line's JSON."""
    return child_result(
        ["-m", "benchmarks.scale", *args],
        cwd=REPO,
        env=isolated_env(),
        timeout=POINT_TIMEOUT_S,
        what=f"scale {' '.join(args)}",
    )


# -- one run, in its own process ---------------------------------------------------------
def _vm_hwm_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _context() -> dict[str, Any]:
    from unittest import mock

    ti = mock.MagicMock(dag_id="scale", run_id="manual__1", task_id="scale", map_index=-1)
    ti.try_number = 1
    return {"ti": ti, "task_state_store": {}, "outlet_events": mock.MagicMock()}


def _through_operator(n: int, store: str, backend: str) -> dict[str, Any]:
    """``RayOrchOperator.execute`` with no connection: the embedded driver's peak RSS is
    its ``VmHWM``, read every 0.2 s while it runs (the last read before it exits)."""
    from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

    op = RayOrchOperator(
        task_id="scale",
        pipeline=PIPELINE,
        pipeline_kwargs={"batch_size": CALL_BATCH},
        sources=list(range(n)),
        input_batch_size=MICROBATCH,
        run_store=store,
        backend=backend,
    )
    peak: dict[int, float] = {}
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.2):
            proc = op._proc
            if proc is not None and (hwm := _vm_hwm_mb(proc.pid)) is not None:
                peak[proc.pid] = max(peak.get(proc.pid, 0.0), hwm)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    started = time.perf_counter()
    try:
        op.execute(_context())  # type: ignore[arg-type]
    finally:
        elapsed = time.perf_counter() - started
        done.set()
        watcher.join()
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {
        "run_id": str(op._prepared_run_id),
        "elapsed_s": elapsed,
        # the last driver started (a retried ray.init starts it again)
        "driver_peak_rss_mb": max(peak.values()) if peak else children,
        "driver_rss_from": "VmHWM" if peak else "RUSAGE_CHILDREN",
    }


def _through_job(n: int, store: str, backend: str) -> dict[str, Any]:
    """The job entrypoint as a Ray job runs it: ``python -m airflow_provider_rayorch.job``
    in a process of its own, connected (``RAY_ADDRESS``) to a 2-CPU local Ray this
    process started, as a head's job supervisor starts a driver (the plan was written
    by the caller). Its peak RSS is that process's own ``ru_maxrss`` (from ``wait4``):
    nothing this process imported or holds is in it."""
    run_id = f"scale-job-{n}"
    env = isolated_env()
    token_dir = tempfile.mkdtemp(prefix="scale-ray-")
    try:
        if backend == "ray":
            env = _own_ray(env, token_dir)
        elapsed, peak_mb = run_job_process(store, run_id, env)
    finally:
        if backend == "ray":
            import ray

            ray.shutdown()
        shutil.rmtree(token_dir, ignore_errors=True)
    return {
        "run_id": run_id,
        "elapsed_s": elapsed,
        "driver_peak_rss_mb": peak_mb,
        "driver_rss_from": "ru_maxrss",
    }


def _own_ray(env: dict[str, str], token_dir: str) -> dict[str, str]:
    """Start this process's local Ray in token mode with a token of its own (in
    ``token_dir``, as the embedded driver's); ``env`` with that token and the Ray's
    address, for a driver that joins it."""
    from airflow_provider_rayorch.operators._embedded import embedded_ray_env

    env = embedded_ray_env(env, token_dir)
    # before Ray is imported: it reads its auth mode once
    os.environ.update({k: env[k] for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")})
    import ray

    from benchmarks.local_ray import init_own_ray

    init_own_ray()
    return {**env, "RAY_ADDRESS": ray.get_runtime_context().gcs_address}


#: Starts a command with its output in a file, waits for it and prints its exit code
#: and ``ru_maxrss``. On Linux a process's ``ru_maxrss`` starts at the peak RSS of the
#: process that spawned it (``exec`` records the memory it replaces), so the driver is
#: spawned from this small process, not from one that imported Ray and Airflow or
#: wrote a plan of millions of sources.
SPAWNER = """
import json, os, sys
out, cmd = sys.argv[1], sys.argv[2:]
fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
dup = [(os.POSIX_SPAWN_DUP2, fd, 1), (os.POSIX_SPAWN_DUP2, fd, 2)]
pid = os.posix_spawn(cmd[0], cmd, os.environ, file_actions=dup)
_pid, status, usage = os.wait4(pid, 0)
print(json.dumps({"code": os.waitstatus_to_exitcode(status), "maxrss_kb": usage.ru_maxrss}))
"""


def run_job_process(
    store: str, run_id: str, env: dict[str, str], module: str = JOB_MODULE
) -> tuple[float, float]:
    """Run the job entrypoint ``module`` on ``run_id`` in a process of its own, its
    output in a file (a job's log), spawned by :data:`SPAWNER`; its seconds and its
    own peak RSS in MB."""
    cmd = [sys.executable, "-m", module, "--run-store", store, "--run-id", run_id]
    with tempfile.TemporaryDirectory(prefix="scale-job-") as tmp:
        log = os.path.join(tmp, "job.log")
        started = time.perf_counter()
        spawned = subprocess.run(
            [sys.executable, "-S", "-c", SPAWNER, log, *cmd],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        elapsed = time.perf_counter() - started
        if spawned.returncode != 0:
            raise RuntimeError(f"spawning the job entrypoint failed: {spawned.stderr[-2000:]}")
        ended = json.loads(spawned.stdout)
        if ended["code"] != 0:
            with open(log) as f:
                tail = f.read()[-2000:]
            raise RuntimeError(f"the job entrypoint exited {ended['code']} on {run_id}: {tail}")
    return elapsed, ended["maxrss_kb"] / 1024


def write_job_plan(n: int, store: str, backend: str) -> None:
    """The plan record the job entrypoint runs (what a submit writes before the job)."""
    from airflow_provider_rayorch.runs.store import PlanRecord, RunStore
    from benchmarks.expand_reduce import Tiny

    RunStore(store).write_plan(
        PlanRecord(
            run_id=f"scale-job-{n}",
            pipeline=PIPELINE,
            fingerprint=Tiny(CALL_BATCH).compile().fingerprint,
            sources=list(range(n)),
            input_batch_size=MICROBATCH,
            max_active_input_batches=2,
            pipeline_kwargs={"batch_size": CALL_BATCH},
            backend=backend,
        )
    )


# -- reading a finished run, in its own process ------------------------------------------
def _median_s(fn: Any, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _store_bytes(store: str, run_id: str) -> dict[str, int]:
    total = plan = 0
    for root, _dirs, files in os.walk(os.path.join(store, run_id)):
        for name in files:
            size = os.path.getsize(os.path.join(root, name))
            total += size
            if name.startswith("plan"):
                plan += size
    return {"total": total, "plan": plan}


def read_figures(store_uri: str, run_id: str, n: int) -> dict[str, Any]:
    """The read side of a finished run: store bytes, one report (from the store, and
    from the driver's aggregate), one microbatch's read-back and the runs page."""
    from airflow_provider_rayorch.plugins import app, pages
    from airflow_provider_rayorch.plugins.resolve import TaskRun
    from airflow_provider_rayorch.reports import write_run_report
    from airflow_provider_rayorch.runs.aggregate import RunAggregate
    from airflow_provider_rayorch.runs.boundary import plain
    from airflow_provider_rayorch.runs.store import RunStore, read_summary_outputs

    store = RunStore(store_uri)
    run = plain(store.run_manifest_record(run_id)) or {}
    plan = store.read_plan(run_id)
    microbatches = -(-n // MICROBATCH)
    middle = plain(store.manifest_record(run_id, microbatches // 2)) or {}
    rows = read_summary_outputs(middle)
    readback = _median_s(lambda: read_summary_outputs(middle))
    report = _median_s(lambda: write_run_report(store, run_id), repeat=5)
    live = None
    if plan is not None:
        aggregate = RunAggregate.of(plan, store.manifest_records(run_id))
        live = _median_s(lambda: write_run_report(store, run_id, live=aggregate.snapshot()), 5)
    task = TaskRun("scale", "manual__1", "scale", -1, run_id, store.uri)
    state = app._state(task)
    page = _median_s(
        lambda: pages.runs_page("runs", [task], states={run_id: app._state(task)}), repeat=5
    )
    sizes = _store_bytes(store_uri, run_id)
    present = (run.get("sources") or {}).get("present")
    return {
        "store_bytes": sizes["total"],
        "plan_bytes": sizes["plan"],
        "store_bytes_per_source": sizes["total"] / n,
        "report_from_store_s": report,
        "report_live_s": live,
        "readback_s": readback,
        "readback_rows": len(rows),
        "runs_page_s": page,
        "run_state": state.state,
        "present": present,
        "correct": present == n and len(rows) == min(MICROBATCH, n),
    }


def measure_point(path: str, n: int, backend: str = "ray", *, keep: str | None = None) -> dict:
    """One run of ``n`` sources along ``path`` and its read side, in a fresh process
    (the job's plan is written here first), in a temporary store (``keep``: this
    folder, left in place)."""
    store = keep or tempfile.mkdtemp(prefix=f"scale-{path}-{n}-")
    try:
        planned = 0.0
        if path == "job":
            began = time.perf_counter()
            write_job_plan(n, store, backend)
            planned = time.perf_counter() - began
        ran = _child(["--point", path, "--sources", str(n), "--store", store, "--backend", backend])
    finally:
        if keep is None:
            shutil.rmtree(store, ignore_errors=True)
    point = {"path": path, "sources": n, "backend": backend, **ran}
    point["plan_write_s"] = round(planned, 2)
    point["per_1000_s"] = ran["elapsed_s"] / n * 1000
    return point


# -- the section --------------------------------------------------------------------------
def _exponent(points: list[dict[str, Any]], key: str) -> float | None:
    """The log-log slope of ``key`` against sources between the smallest and the largest."""
    import math

    pts = sorted((p["sources"], p[key]) for p in points if p.get(key))
    if len(pts) < 2 or pts[0][0] == pts[-1][0]:
        return None
    (n0, y0), (n1, y1) = pts[0], pts[-1]
    return round(math.log(y1 / y0) / math.log(n1 / n0), 3)


def summarize(points: list[dict[str, Any]]) -> dict[str, Any]:
    """Growth exponents per path: total seconds, peak RSS, read-back, report."""
    keys = (
        "elapsed_s",
        "driver_peak_rss_mb",
        "readback_s",
        "report_live_s",
        "report_from_store_s",
        "runs_page_s",
    )
    return {
        path: {k: _exponent([p for p in points if p["path"] == path], k) for k in keys}
        for path in PATHS
        if any(p["path"] == path for p in points)
    }


def run_section(spec: Any, results: dict[str, Any], systems: Any = None) -> dict[str, Any]:
    """The suite's ``scale`` section at ``spec``'s sizes."""
    from .scale_triggers import measure_triggers

    points = []
    for path in PATHS:
        for n in spec.scale_sources:
            print(f"[scale] {path} {n:,} sources", flush=True)
            points.append(measure_point(path, n, spec.scale_backend))
    triggers = [
        measure_triggers(c, spec.scale_trigger_s, spec.scale_trigger_warm_s)
        for c in spec.scale_triggers
    ]
    return {
        "points": points,
        "growth": summarize(points),
        "triggers": triggers,
        "microbatch": MICROBATCH,
        "note": "one window on 2 shared cores (other helpers' tests ran beside it), "
        f"nice 5; {spec.scale_backend} backend",
    }


def merge_points(out: Path, new: list[dict[str, Any]]) -> dict[str, Any]:
    """Put ``new`` points into ``out``/results.json's scale section (replacing a point of
    the same path and size), then rewrite the README and plots."""
    from .report import write_report

    path = out / "results.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    section = results.setdefault("scale", {"points": [], "triggers": []})
    fresh = {(p["path"], p["sources"]) for p in new}
    kept = [p for p in section["points"] if (p["path"], p["sources"]) not in fresh]
    section["points"] = sorted([*kept, *new], key=lambda p: (p["path"], p["sources"]))
    section["growth"] = summarize(section["points"])
    command = "python -m benchmarks.scale " + " ".join(sys.argv[1:])
    results.setdefault("merged", []).append({"command": command, "sections": ["scale"]})
    path.write_text(json.dumps(results, indent=1, default=str))
    write_report(results, out)
    return results


def _kept(keep: str | None, path: str, n: int) -> str | None:
    """Where ``--keep`` keeps the store of one point (None: a temporary store)."""
    return None if keep is None else os.path.join(keep, f"{path}-{n}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, nargs="+", default=[10_000])
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    parser.add_argument("--backend", choices=("ray", "local"), default="ray")
    parser.add_argument("--out", type=Path, help="merge the points into this results.json")
    parser.add_argument("--keep", metavar="DIR", help="keep each run's store under DIR")
    parser.add_argument("--point", choices=PATHS, help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    n = args.sources[0]
    if args.point:
        run = _through_operator if args.point == "operator" else _through_job
        ran = run(n, args.store, args.backend)
        read = read_figures(args.store, ran["run_id"], n)
        print(json.dumps({**ran, **read}), flush=True)
        return
    points = [
        measure_point(p, s, args.backend, keep=_kept(args.keep, p, s))
        for p in args.paths
        for s in args.sources
    ]
    for p in points:
        print(json.dumps(p), flush=True)
    if args.out:
        merge_points(args.out, points)


if __name__ == "__main__":
    main()
