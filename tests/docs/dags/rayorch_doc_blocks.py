"""The DAG the REST examples of docs/airflow act on in tests (tests/e2e/test_doc_blocks.py):
a task group ``docs`` with a mapped ``microbatch`` task and a ``run`` task, named like
``rayorch_microbatch_group``'s, but plain Python tasks, so a documented call's effect
(a clear that re-runs ``docs.microbatch[0]``) is seen in seconds."""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, TaskGroup, task

with (
    DAG(
        dag_id="rayorch_doc_blocks",
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        tags=["rayorch", "tests"],
    ),
    TaskGroup("docs"),
):

    @task
    def microbatch(index: int) -> dict[str, int]:
        return {"index": index}

    @task
    def run(summaries: list[dict[str, int]]) -> int:
        return len(list(summaries))

    run(microbatch.expand(index=[0, 1]))
