"""Scheduled ingestion: every hour, prepare the text files that landed in the hour.

Sources are the files matching ``$RAYORCH_LANDING/*.txt`` modified within the data
interval (resolved through pyarrow.fs, so an ``s3://`` glob works the same). A manual
run with no logical date (the REST API's default, and the UI's trigger form left
empty) has no data interval: it prepares the files modified in the hour before it
was triggered (``dag_run.run_after``), so a file that just arrived is taken. Each
source microbatch is one mapped task that turns green as soon as its manifest
commits and carries its own lineage summary in XCom; ``report`` then reads the
committed outputs back from the run store, with the connection's ``run_store_options``.

On one machine the group runs on the machine's shared loopback Ray head (its
``ray_head`` task finds it, or starts it once for the runs starting together; it stops
itself when idle, and ``scripts/deployment.py stop`` stops it); with a cluster, set
``RAYORCH_INGEST_LOCAL_HEAD=0`` and point the ``rayorch_default`` connection at the
cluster's Jobs API with a shared run store.
"""

from __future__ import annotations

import os
from typing import Any

import pendulum
from airflow.sdk import DAG, Asset, CronDataIntervalTimetable, task

from airflow_provider_rayorch.operators.microbatch import rayorch_microbatch_group

LANDING = os.environ.get("RAYORCH_LANDING", "/tmp/rayorch-landing")
LOCAL_HEAD = "shared" if os.environ.get("RAYORCH_INGEST_LOCAL_HEAD", "1") == "1" else False
# The run's window: its data interval, or, for a manual run with no logical date (which
# has no data interval), the hour up to the moment it was triggered. Both bounds are
# fixed per run, so every try of the submit task lists the same files.
MODIFIED_AFTER = (
    "{{ data_interval_start | default(dag_run.run_after - macros.timedelta(hours=1), true) }}"
)
MODIFIED_BEFORE = "{{ data_interval_end | default(dag_run.run_after, true) }}"
PREPARED = Asset("rayorch-prepared-docs", uri="file:///tmp/rayorch-prepared-docs")

with DAG(
    dag_id="rayorch_ingest",
    # Data intervals are whole hours (a plain "@hourly" would give empty ones in Airflow 3).
    schedule=CronDataIntervalTimetable("@hourly", timezone="UTC"),
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["rayorch", "example"],
    doc_md=__doc__,
):
    ingest = rayorch_microbatch_group(
        "ingest",
        pipeline="rayorch_example_pipelines:TextDocPipeline",
        # the three light stages share one actor process: fewer process starts per run
        pipeline_kwargs={"read_files": True, "share_process": "text"},
        sources=f"{LANDING}/*.txt",
        input_batch_size=4,
        max_active_input_batches=2,
        max_failed_ratio=0.25,
        local_head=LOCAL_HEAD,
        # logical CPUs for the runs sharing the head (the first start decides)
        local_head_num_cpus=8,
        poke_interval=2.0,
        submit_kwargs={
            "sources_modified_after": MODIFIED_AFTER,
            "sources_modified_before": MODIFIED_BEFORE,
        },
    )

    @task(outlets=[PREPARED])
    def report(summary: dict[str, Any]) -> dict[str, int]:
        """Read the committed outputs of the run back from the run store, with the
        connection's run_store_options (an S3-compatible endpoint, keys)."""
        from airflow_provider_rayorch.hooks.rayorch import RayOrchHook

        hook = RayOrchHook("rayorch_default")  # the group's rayorch_conn_id
        rows = hook.read_summary_outputs(summary) if summary["sources"]["total"] else []
        present = [r["value"] for r in rows if r["outcome"] == "present"]
        return {"documents": len(present), "words": sum(v["words"] for v in present)}

    report(ingest.get_child_by_label("run").output)
