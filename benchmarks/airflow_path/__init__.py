"""The Airflow path, measured (issues 21 and 29): what an Airflow user waits for.

    python -m benchmarks.airflow_path --runs 3 --event-files 4   # 10-20 min on 2 cores

On a real loopback deployment (scheduler, DAG processor, triggerer, API server,
started by ``scripts/deployment.py`` in a temporary HOME and AIRFLOW_HOME) the same 24
text documents are prepared by ``RayOrchOperator`` and by the microbatch pattern
(submit, mapped microbatch sensors, run sensor; its triggers ending the tasks or not)
on one loopback Ray head given through the connection, by both again on the machine's
shared head (``local_head="shared"``), and by two plain ``@task``s running Ray Data
(whole documents, or pages gathered per document with ``groupby``), each DAG
triggered through the REST API ``--runs`` times in turn; then files land one at a time
in the inbox of the event-driven example (``rayorch_events``, on the shared head).
Every time is a fact (REST API, run store, Ray's Jobs API, output files); the medians,
percentiles and goals go to ``airflow_path.json`` and ``airflow-path.md`` in
docs/benchmarks/ (see docs/performance/airflow-path.md for what each figure means).
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..sizes import Size

__all__ = ["measure", "ray_data_missing", "run_section"]

DOCUMENTS = 24
BATCH = 8
#: The run that starts the shared head before the measured rounds (not counted).
SHARED_WARMUP = "RayOrchOperator, shared head"
#: The section's smallest run (about 5 minutes on 2 cores).
SMOKE = "python -m benchmarks.airflow_path --runs 1 --event-files 1"


def measure(
    runs: int = 3, event_files: int = 4, *, documents: int = DOCUMENTS, batch: int = BATCH,
    keep: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """Start the deployment, start the shared head with one uncounted run, measure
    every variant ``runs`` times (interleaved; the Ray Data ones only where Ray Data
    imports) and ``event_files`` event-driven files, stop everything; returns the
    section's result."""
    from .deployment import start_bench
    from .events import POLL_S, measure_events
    from .facts import VARIANTS, Kind, load, measure_run
    from .goals import goals
    from .summary import summarize_events, summarize_runs

    began, load_start = time.perf_counter(), load()
    missing = ray_data_missing()
    skipped = {n: missing for n, v in VARIANTS.items() if missing and v.kind is Kind.RAY_DATA}
    bench = start_bench(documents, batch, [v.dag_id for v in VARIANTS.values()])
    setup_s = round(time.perf_counter() - began, 1)
    measured: list[dict[str, Any]] = []
    warmup: dict[str, Any] | None = None
    events: list[dict[str, Any]] = []
    errors: list[str] = []  # a run or file that never ended is reported, not fatal

    def one(variant: str) -> dict[str, Any]:
        try:
            return measure_run(bench, variant)
        except TimeoutError as exc:
            errors.append(f"{variant}: {exc}")
            return {"variant": variant, "state": "timeout"}

    try:
        # the shared head's first start, not counted (every later run finds it up)
        warmup = one(SHARED_WARMUP)
        for _ in range(runs):
            measured += [one(variant) for variant in VARIANTS if variant not in skipped]
        if event_files:
            try:
                events = measure_events(bench, event_files)
            except TimeoutError as exc:
                errors.append(f"event-driven: {exc}")
        if errors:
            errors.append(bench.logs())
    finally:
        bench.stop(keep=keep)
    variants = summarize_runs(measured)
    return {
        "documents": documents,
        "input_batch_size": batch,
        "microbatches": -(-documents // batch),
        "runs_per_variant": runs,
        "variants": variants,
        "goals": goals(variants),
        "skipped": skipped,
        "warmup": warmup,
        "events": summarize_events(events, POLL_S) if events else None,
        "errors": errors,
        "airflow_settings": bench.settings,
        "setup_s": setup_s,
        "section_s": round(time.perf_counter() - began, 1),
        "loadavg": {"start": load_start, "end": load()},
    }


def ray_data_missing() -> str | None:
    """Why this Python cannot run Ray Data (the bench extra is not installed), or None."""
    probe = subprocess.run(
        [sys.executable, "-c", "import ray.data"], capture_output=True, text=True, check=False
    )
    if probe.returncode == 0:
        return None
    last = (probe.stderr.strip().splitlines() or ["import ray.data failed"])[-1]
    return f"{last} (install the bench extra: pip install -e '.[bench]')"


def run_section(spec: Size, results: dict[str, Any], systems: tuple[str, ...] | None = None) -> Any:
    """The suite's entry: 3 runs per variant and 4 event files. Not at the smoke size
    (its deployment alone takes a minute; CI's smoke suite has 10): run it alone there."""
    if spec.rounds <= 1:
        return {"skipped": f"not at this size: run `{SMOKE}` instead"}
    return measure(runs=3, event_files=4)
