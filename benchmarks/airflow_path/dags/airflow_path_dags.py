"""The Airflow-path benchmark's DAGs (benchmarks/airflow_path): the same text files
prepared three ways on the same loopback Ray head, each triggered through the REST API.

- ``ap_operator``: ``RayOrchOperator`` (its defaults: waits in the worker, polls the job).
- ``ap_microbatch``: ``rayorch_microbatch_group`` (submit, mapped microbatch sensors,
  run sensor; its defaults: deferrable, poke interval 5 s).
- ``ap_raydata``: a plain ``@task`` running Ray Data on the cluster (no provider).

The benchmark sets ``AP_INPUTS`` (the files' folder), ``AP_OUTPUT`` (Ray Data's output
root), ``AP_RAY_GCS`` and ``AP_RAY_TOKEN_PATH`` (the head's address and token file,
for the plain task) and ``AP_BATCH`` (sources per microbatch). The RayOrch tasks reach
the head through the ``rayorch_bench`` connection.
"""

from __future__ import annotations

import os
from typing import Any

import pendulum
from airflow.sdk import DAG, task

from airflow_provider_rayorch.operators.microbatch import rayorch_microbatch_group
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

INPUTS = os.environ.get("AP_INPUTS", "/tmp/airflow-path-inputs")
SOURCES = f"{INPUTS}/*.txt"
BATCH = int(os.environ.get("AP_BATCH", "8"))
CONN = "rayorch_bench"
PIPELINE = "rayorch_example_pipelines:TextDocPipeline"
# rayorch_ingest's settings: the light stages share one actor process
KWARGS = {"read_files": True, "share_process": "text"}
COMMON: dict[str, Any] = {
    "schedule": None,
    "start_date": pendulum.datetime(2026, 1, 1, tz="UTC"),
    "catchup": False,
    "max_active_runs": 1,
    "tags": ["rayorch", "benchmark"],
}

#: The same run for the operator and the microbatch pattern.
RUN: dict[str, Any] = {
    "pipeline": PIPELINE,
    "pipeline_kwargs": KWARGS,
    "sources": SOURCES,
    "input_batch_size": BATCH,
    "max_active_input_batches": 2,
    "rayorch_conn_id": CONN,
}

with DAG(dag_id="ap_operator", **COMMON):
    RayOrchOperator(task_id="prepare", **RUN)

with DAG(dag_id="ap_microbatch", **COMMON):
    rayorch_microbatch_group("prepare", **RUN)

with DAG(dag_id="ap_raydata", **COMMON):

    @task
    def prepare(**context: Any) -> dict[str, Any]:
        """Ray Data over the same files, written to ``$AP_OUTPUT/<run id>``."""
        from benchmarks.airflow_path.work import prepare_with_ray_data

        out = os.path.join(os.environ.get("AP_OUTPUT", "/tmp/airflow-path-out"), "raydata")
        run = "".join(c if c.isalnum() else "_" for c in context["run_id"])
        return prepare_with_ray_data(
            SOURCES,
            os.path.join(out, run),
            address=os.environ.get("AP_RAY_GCS"),
            token_path=os.environ.get("AP_RAY_TOKEN_PATH"),
        )

    prepare()
