"""The per-microbatch pattern with its run store on S3 (the e2e loopback S3 server):
the connection ``rayorch_s3`` names the Ray head, ``run_store`` (an ``s3://`` URI) and
``run_store_options`` (endpoint and credentials); tests/e2e/test_s3_store.py makes it."""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_provider_rayorch.operators.microbatch import rayorch_microbatch_group

with DAG(
    dag_id="rayorch_s3",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["rayorch", "test"],
):
    rayorch_microbatch_group(
        "docs",
        pipeline="s3_pipelines:GatedFlaky",
        pipeline_kwargs={"state_dir": "{{ dag_run.conf['state_dir'] }}", "first": [0, 1, 2]},
        sources=list(range(6)),
        input_batch_size=3,
        rayorch_conn_id="rayorch_s3",
        poke_interval=1.0,
    )
