"""The commit-on-defer DAG's side of its tests (deployment_dags/rayorch_commit_on_defer.py):
its manifests, and committing each one the moment its sensor starts waiting."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from e2e_runs import failure_digest

if TYPE_CHECKING:
    from collections.abc import Collection

    from rest import AirflowRest

    from airflow_provider_rayorch.runs.store import RunStore

DAG_ID = "rayorch_commit_on_defer"
TASK = "microbatch"
RUN = "commit-on-defer"  # the DAG's run_id
SENSORS = 24
ENDED = {"success", "failed", "upstream_failed", "skipped"}


def manifest(index: int) -> dict[str, Any]:
    """Microbatch 0 has 2 of its 4 sources FAILED (over the DAG's 0.25 bar)."""
    failed = 2 if index == 0 else 0
    return {
        "run_id": RUN,
        "index": index,
        "state": "success",
        "sources": {
            "total": 4,
            "present": 4 - failed,
            "dropped": 0,
            "failed": failed,
            "suppressed": 0,
        },
        "failures": [
            {"source": s, "outcome": "failed", "cause": f"page {s}: unreadable"}
            for s in range(failed)
        ],
    }


def commit_each_as_it_waits(
    rest: AirflowRest,
    run_id: str,
    store: RunStore,
    *,
    waiting: Collection[str],
    deadline_s: float,
) -> dict[tuple[str, int], dict[str, Any]]:
    """Commit each sensor's manifest as soon as its task instance shows a state of
    ``waiting``; return the task instances once all sensors ended. Polls a few times a
    second: the sooner the commit, the sooner after the wait began it is seen."""
    committed: set[int] = set()
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        tis = rest.task_instances(DAG_ID, run_id)
        mapped = {i: ti for (task, i), ti in tis.items() if task == TASK and i >= 0}
        for i, ti in mapped.items():
            if ti["state"] in waiting and i not in committed:
                store.commit_microbatch(RUN, i, manifest(i))
                committed.add(i)
        if len(mapped) == SENSORS and all(ti["state"] in ENDED for ti in mapped.values()):
            return tis
        time.sleep(0.25)
    raise AssertionError(
        f"the sensors did not all end within {deadline_s}s (committed {sorted(committed)})\n"
        + failure_digest(rest, DAG_ID, run_id)
    )
