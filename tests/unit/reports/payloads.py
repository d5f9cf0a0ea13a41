"""A run store whose every user- or pipeline-controlled field carries HTML and script,
for the plugin's unit and browser tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_provider_rayorch.rayorch.summary import run_summary

from .conftest import make_run, make_timeline

if TYPE_CHECKING:
    from airflow_provider_rayorch.runs.store import RunStore

#: Breaks out of an attribute and of text, and would set ``window.__pwned`` and the title.
PAYLOAD = (
    "\"'><script>window.__pwned=1;document.title='pwned'</script>"
    "<img src=x onerror=\"window.__pwned=2;document.title='pwned'\">"
)
#: A run id is a directory name: no slash, still markup and an event handler.
RUN_PAYLOAD = "r\"'><img src=x onerror=window.__pwned=3>"


def plant(root: Path, *, finished: bool = True) -> RunStore:
    """Run ``RUN_PAYLOAD`` with PAYLOAD in its source names, causes, pipeline, stage
    names, job message and repair record (job id, message), and a driver log named
    with markup."""
    from airflow_provider_rayorch.reports import write_run_report
    from airflow_provider_rayorch.runs.attempts import write_repair

    sources = [f"{PAYLOAD}-{i}.pdf" for i in range(10)]
    issues = {3: ("failed", f"cause {PAYLOAD}"), 5: ("suppressed", PAYLOAD), 8: ("dropped", None)}
    store = make_run(
        root,
        run_id=RUN_PAYLOAD,
        finished=False,
        sources=sources,
        issues=issues,
        pipeline=f"pkg.mod:{PAYLOAD}",
    )
    if finished:
        summary = run_summary(
            [m.to_dict() for m in store.manifest_records(RUN_PAYLOAD)],
            elapsed_s=1.0,
            run_id=RUN_PAYLOAD,
        )
        store.write_run_manifest(RUN_PAYLOAD, summary)
    write_repair(store, RUN_PAYLOAD, 1, attempt=2, status="refused", job_id=PAYLOAD,
                 message=PAYLOAD)  # fmt: skip
    # a driver log named with markup (anyone who writes to the store names its files)
    store.write_bytes((RUN_PAYLOAD, "logs", f"driver-{RUN_PAYLOAD}.log"), PAYLOAD.encode())
    # the driver's report, with PAYLOAD as a stage name (a pipeline names its Calls)
    timeline, calls, timings = make_timeline()
    for record in (*timeline, *calls):
        key = "call" if "call" in record else "name"
        record[key] = f"{record[key]} {PAYLOAD}"
    write_run_report(store, RUN_PAYLOAD, timeline, calls, microbatches=timings)
    store.write_job_state(RUN_PAYLOAD, "FAILED", PAYLOAD)
    return store


def plant_states(store: RunStore) -> None:
    """PAYLOAD as the run manifest's state and the job's status, written as raw bytes
    (as anyone with write access to the store can): the store's own writers refuse it."""
    base = Path(store.root) / RUN_PAYLOAD
    run = json.loads((base / "run.json").read_text())
    (base / "run.json").write_text(json.dumps({**run, "state": PAYLOAD}))
    job = json.loads((base / "job_state.json").read_text())
    (base / "job_state.json").write_text(json.dumps({**job, "job_status": PAYLOAD}))
