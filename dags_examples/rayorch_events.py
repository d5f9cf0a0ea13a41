"""Event-driven ingestion: prepare text files as soon as they land, each one once.

The asset ``rayorch-inbox`` has an ``AssetWatcher``: in the triggerer,
``RayOrchNewSourcesTrigger`` lists ``$RAYORCH_INBOX/*.txt`` (default
``/tmp/rayorch-landing/inbox``) every 5 seconds and
announces each file once it has landed (nothing changed it for 2 seconds), in an
asset event. The DAG runs on
those events:

1. ``select_sources`` merges the files of every event since the previous run (the
   trigger delivers at least once, so a file may come twice) and drops the files an
   earlier run committed. With none left, the run is skipped.
2. ``prepare`` runs ``TextDocPipeline`` over them as a Ray job on the machine's shared
   loopback head (``ray_head`` finds it, or starts it once; no Ray starts per run); a
   page containing ``POISON`` fails its document, and ``max_failed_ratio`` tolerates
   some.
3. ``record`` writes the files to the asset's state store: no later run takes them.

``max_active_runs=1`` keeps runs in order, so each sees what the previous recorded.
Try it with a scheduler, a dag-processor and a triggerer running: unpause the DAG, then
write ``/tmp/rayorch-landing/inbox/a.txt``. See docs/airflow/event-driven.md.
"""

from __future__ import annotations

import os
from typing import Any

import pendulum
from airflow.sdk import DAG, Asset, AssetWatcher, task
from airflow.sdk.exceptions import AirflowSkipException

from airflow_provider_rayorch.assets.new_sources import new_sources, record_committed
from airflow_provider_rayorch.operators.local_head import RayLocalHeadStartOperator
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator
from airflow_provider_rayorch.triggers.sources import RayOrchNewSourcesTrigger

# $RAYORCH_INBOX, else an "inbox" folder beside rayorch_ingest's landing folder.
INBOX_DIR = (
    os.environ.get("RAYORCH_INBOX")
    or os.path.join(os.environ.get("RAYORCH_LANDING", "/tmp/rayorch-landing"), "inbox")
).rstrip("/")
INBOX_NAME = "rayorch-inbox"
INBOX = Asset(
    INBOX_NAME,
    uri=f"file://{INBOX_DIR}",
    watchers=[
        AssetWatcher(
            name="rayorch-inbox-files",
            trigger=RayOrchNewSourcesTrigger(
                f"{INBOX_DIR}/*.txt",
                asset_name=INBOX_NAME,
                poll_interval=float(os.environ.get("RAYORCH_INBOX_POLL_S", "5")),
                max_files_per_event=100,
            ),
        )
    ],
)

with DAG(
    dag_id="rayorch_events",
    schedule=[INBOX],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["rayorch", "example"],
    doc_md=__doc__,
):

    @task(inlets=[INBOX])
    def select_sources(**context: Any) -> list[str]:
        """The files of this run's asset events that no run has committed yet."""
        sources = new_sources(context, INBOX)
        if not sources:
            raise AirflowSkipException("every announced file was committed by an earlier run")
        return sources

    sources = select_sources()
    # the machine's shared head: found up (or started once), stopped by no run
    head = RayLocalHeadStartOperator(task_id="ray_head", shared=True, num_cpus=8)
    prepare = RayOrchOperator(
        task_id="prepare",
        pipeline="rayorch_example_pipelines:TextDocPipeline",
        pipeline_kwargs={"read_files": True},
        sources=sources,
        input_batch_size=8,
        max_failed_ratio=0.25,
        ray_address="{{ ti.xcom_pull(task_ids='ray_head')['address'] }}",
    )
    sources >> head >> prepare

    @task(inlets=[INBOX])
    def record(sources: list[str], summary: dict[str, Any], **context: Any) -> dict[str, Any]:
        """The run's last task: its files are committed, never to be taken again."""
        added = record_committed(
            context["asset_state_store"][INBOX], sources, run_id=context["run_id"]
        )
        return {"recorded": added, "sources": summary["sources"]}

    record(sources, prepare.output)
