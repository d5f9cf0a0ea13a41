"""The Airflow path, measured (issue 21): what an Airflow user waits for.

    python -m benchmarks.airflow_path --runs 3 --event-files 4   # 5-9 min on 2 cores

On a real loopback deployment (scheduler, DAG processor, triggerer, API server,
started by ``scripts/deployment.py`` in a temporary HOME and AIRFLOW_HOME) and one
loopback Ray head (``start_local_head``, stopped by its process group), the same 24
text documents are prepared by ``RayOrchOperator``, by the microbatch pattern
(submit, mapped microbatch sensors, run sensor) and by a plain ``@task`` running Ray
Data, each DAG triggered through the REST API ``--runs`` times in turn; then files
land one at a time in the inbox of the event-driven example (``rayorch_events``).
Every time is a fact (REST API, run store, Ray's job table, output files); the
medians and percentiles go to ``airflow_path.json`` and ``airflow-path.md`` in
docs/benchmarks/ (see docs/performance/airflow-path.md for what each figure means).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..sizes import Size

__all__ = ["measure", "run_section"]

DOCUMENTS = 24
BATCH = 8
#: The section's smallest run (about 4 minutes on 2 cores).
SMOKE = "python -m benchmarks.airflow_path --runs 1 --event-files 1"


def measure(
    runs: int = 3, event_files: int = 4, *, documents: int = DOCUMENTS, batch: int = BATCH,
    keep: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """Start the deployment, measure every variant ``runs`` times (interleaved) and
    ``event_files`` event-driven files, stop everything; returns the section's result."""
    from .deployment import start_bench
    from .events import POLL_S, measure_events
    from .facts import VARIANTS, load, measure_run
    from .summary import summarize_events, summarize_runs

    began, load_start = time.perf_counter(), load()
    bench = start_bench(documents, batch)
    setup_s = round(time.perf_counter() - began, 1)
    measured: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    errors: list[str] = []  # a run or file that never ended is reported, not fatal
    try:
        for _ in range(runs):
            for variant in VARIANTS:
                try:
                    measured.append(measure_run(bench, variant))
                except TimeoutError as exc:
                    measured.append({"variant": variant, "state": "timeout"})
                    errors.append(f"{variant}: {exc}")
        if event_files:
            try:
                events = measure_events(bench, event_files)
            except TimeoutError as exc:
                errors.append(f"event-driven: {exc}")
        if errors:
            errors.append(bench.logs())
    finally:
        bench.stop(keep=keep)
    return {
        "documents": documents,
        "input_batch_size": batch,
        "microbatches": -(-documents // batch),
        "runs_per_variant": runs,
        "variants": summarize_runs(measured),
        "events": summarize_events(events, POLL_S) if events else None,
        "errors": errors,
        "airflow_settings": bench.settings,
        "setup_s": setup_s,
        "section_s": round(time.perf_counter() - began, 1),
        "loadavg": {"start": load_start, "end": load()},
    }


def run_section(spec: Size, results: dict[str, Any], systems: tuple[str, ...] | None = None) -> Any:
    """The suite's entry: 3 runs per variant and 4 event files. Not at the smoke size
    (its deployment alone takes a minute; CI's smoke suite has 10): run it alone there."""
    if spec.rounds <= 1:
        return {"skipped": f"not at this size: run `{SMOKE}` instead"}
    return measure(runs=3, event_files=4)
