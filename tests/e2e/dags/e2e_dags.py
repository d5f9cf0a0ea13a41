"""DAGs of tests/e2e/test_deployment_cluster.py, served by the e2e deployment; the
connections they name are made through its REST API, ``E2E_DELAY_S`` comes from its env."""

from __future__ import annotations

import os
from datetime import timedelta

import pendulum
from airflow.sdk import DAG
from rayorch_example_pipelines import sample_docs

from airflow_provider_rayorch.operators.microbatch import rayorch_microbatch_group
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

START = pendulum.datetime(2026, 1, 1, tz="UTC")
PIPELINE = "rayorch_example_pipelines:TextDocPipeline"
DELAY = float(os.environ.get("E2E_DELAY_S", "0"))


def _dag(dag_id: str) -> DAG:
    return DAG(dag_id=dag_id, schedule=None, start_date=START, catchup=False)


with _dag("e2e_embedded"):
    RayOrchOperator(
        task_id="docs",
        pipeline=PIPELINE,
        sources=sample_docs(12, poison=(5,)),
        input_batch_size=4,
        max_active_input_batches=2,
        max_failed_ratio=0.1,
    )

for deferrable in (False, True):
    with _dag(f"e2e_cluster_{'deferrable' if deferrable else 'sync'}"):
        RayOrchOperator(
            task_id="docs",
            pipeline=PIPELINE,
            sources=sample_docs(10),
            input_batch_size=4,
            rayorch_conn_id="rayorch_head",
            deferrable=deferrable,
            poll_interval=1.0,
        )

with _dag("e2e_retry"):
    RayOrchOperator(
        task_id="docs",
        pipeline=PIPELINE,
        pipeline_kwargs={"delay_s": DELAY, "replicas": 1},
        sources=sample_docs(16),
        input_batch_size=2,
        rayorch_conn_id="rayorch_head",
        poll_interval=0.5,
        retries=2,
        retry_delay=timedelta(seconds=1),
    )

with _dag("e2e_microbatch"):
    rayorch_microbatch_group(
        "docs",
        pipeline=PIPELINE,
        pipeline_kwargs={"delay_s": DELAY},
        sources=sample_docs(12, poison=(5,)),
        input_batch_size=4,
        rayorch_conn_id="rayorch_head",
        max_failed_ratio=0.0,
        poke_interval=1.0,
    )

with _dag("e2e_compile_error"):
    RayOrchOperator(
        task_id="docs",
        pipeline="e2e_pipelines:DoesNotCompile",
        sources=["a", "b"],
        rayorch_conn_id="rayorch_head",
        retries=3,
    )

with _dag("e2e_unreachable"):
    RayOrchOperator(
        task_id="docs",
        pipeline=PIPELINE,
        sources=sample_docs(2),
        rayorch_conn_id="rayorch_nowhere",
        poll_interval=1.0,  # the transient-error retry budget backs off from this interval
    )

with DAG(
    dag_id="e2e_shared_head", schedule=None, start_date=START, catchup=False, max_active_runs=8
):
    rayorch_microbatch_group(
        "docs",
        pipeline=PIPELINE,
        sources=sample_docs(8),
        input_batch_size=4,
        local_head="shared",
        local_head_num_cpus=8,
        poke_interval=1.0,
    )
