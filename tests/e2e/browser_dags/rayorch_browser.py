"""The DAG the browser test runs: the per-microbatch pattern on a loopback Ray head.

12 documents in 3 source microbatches; document 5 has an unreadable page, which
``max_failed_ratio=0.25`` tolerates, so every task succeeds and the failure shows
in microbatch 1's lineage summary and in the run report.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG
from rayorch_example_pipelines import sample_docs

from airflow_provider_rayorch.operators.microbatch import rayorch_microbatch_group

with DAG(
    dag_id="rayorch_browser",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["rayorch", "test"],
):
    rayorch_microbatch_group(
        "docs",
        pipeline="rayorch_example_pipelines:TextDocPipeline",
        pipeline_kwargs={"delay_s": 0.02},
        sources=sample_docs(12, poison=(5,)),
        input_batch_size=4,
        max_active_input_batches=2,
        rayorch_conn_id="rayorch_head",
        max_failed_ratio=0.25,
        poke_interval=1.0,
    )
