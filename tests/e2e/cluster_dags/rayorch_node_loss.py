"""The per-microbatch pattern on a 2-node cluster whose model stage runs only on the
worker node (tests/e2e/test_cluster_node_loss.py kills that node mid-run). The
connection ``rayorch_node_loss`` names the head's Jobs API, its token and the run
store; the test makes it."""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_provider_rayorch.operators.microbatch import rayorch_microbatch_group

with DAG(
    dag_id="rayorch_node_loss",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["rayorch", "test"],
):
    rayorch_microbatch_group(
        "docs",
        pipeline="node_loss_pipelines:NodeLossPipeline",
        pipeline_kwargs={"state_dir": "{{ dag_run.conf['state_dir'] }}", "first": [0, 1]},
        sources=list(range(8)),
        input_batch_size=2,
        max_active_input_batches=3,
        rayorch_conn_id="rayorch_node_loss",
        poke_interval=1.0,
    )
