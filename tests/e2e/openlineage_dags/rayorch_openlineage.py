"""DAGs of tests/e2e/test_openlineage.py, served by a deployment whose OpenLineage
listener writes every event to a file: a ``RayOrchOperator`` and a per-microbatch
group, both on the ``rayorch_ol`` connection (made by the test through the REST API,
with secrets in it) and on text files the test writes (``dag_run.conf``). The
operator's run has a poisoned file and fails (max_failed_ratio 0): its FAIL event."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG

from airflow_provider_rayorch.operators.microbatch import rayorch_microbatch_group
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

START = pendulum.datetime(2026, 1, 1, tz="UTC")
PIPELINE = "rayorch_example_pipelines:TextDocPipeline"
#: one actor process per run (a cold start each, on a head two runs share)
KWARGS = {"read_files": True, "replicas": 1, "share_process": "ol"}
CONN = "rayorch_ol"

with DAG("ol_operator", schedule=None, start_date=START, catchup=False):
    RayOrchOperator(
        task_id="docs",
        pipeline=PIPELINE,
        pipeline_kwargs=KWARGS,
        sources="{{ dag_run.conf['glob'] }}",  # listed by the task
        input_batch_size=2,
        rayorch_conn_id=CONN,
        poll_interval=1.0,
    )

with DAG(
    "ol_microbatch",
    schedule=None,
    start_date=START,
    catchup=False,
    render_template_as_native_obj=True,  # ``sources`` renders as the conf's list
    # A deferred sensor resumes on a worker beside the listener, where Airflow 3.3's
    # stale-success race (apache/airflow#72716) can fail a try: retries, which the
    # test records (the group passes no retries to its run sensor: the DAG's
    # defaults give them to every task).
    default_args={"retries": 2, "retry_delay": timedelta(seconds=1)},
):
    rayorch_microbatch_group(
        "docs",
        pipeline=PIPELINE,
        pipeline_kwargs=KWARGS,
        sources="{{ dag_run.conf['files'] }}",
        input_batch_size=2,
        rayorch_conn_id=CONN,
        poke_interval=1.0,
    )
