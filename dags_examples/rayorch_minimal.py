"""The README's main job: prepare 48 small documents on an embedded local Ray.

No connection is needed: without ``rayorch_default`` the operator starts a local
Ray for the run (in a child process of the worker) and stops it afterwards. One
document carries an unreadable page; ``max_failed_ratio=0.05`` tolerates it, and
the task's return value (XCom) is the run's lineage summary.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG
from rayorch_example_pipelines import sample_docs

from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

with DAG(
    dag_id="rayorch_minimal",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["rayorch", "example"],
    doc_md=__doc__,
):
    RayOrchOperator(
        task_id="prepare_docs",
        pipeline="rayorch_example_pipelines:TextDocPipeline",
        pipeline_kwargs={"replicas": 2},
        sources=sample_docs(48, poison=(7,)),
        input_batch_size=8,
        max_active_input_batches=2,
        max_failed_ratio=0.05,
        outputs_asset_alias="rayorch-minimal-outputs",
    )
