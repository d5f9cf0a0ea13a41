"""The Airflow-path benchmark's DAGs (benchmarks/airflow_path): the same text files
prepared seven ways, each triggered through the REST API.

On the benchmark's loopback Ray head, given through the ``rayorch_bench`` connection:

- ``ap_operator``: ``RayOrchOperator`` (its defaults: waits in the worker, polls the job).
- ``ap_microbatch``: ``rayorch_microbatch_group`` (submit, mapped microbatch sensors,
  run sensor; its defaults: deferrable, the triggers end the tasks, poke interval 5 s).
- ``ap_microbatch_resume``: the same group with ``end_from_trigger=False`` on both
  sensors (deferred; each task resumes on a worker once its trigger fired).
- ``ap_raydata``: a plain ``@task`` running Ray Data on the cluster (no provider), a
  batch of whole documents at a time.
- ``ap_raydata_groupby``: the same ``@task`` working page by page and gathering the
  pages per document with ``groupby`` (the pipeline's shape).

On the machine's shared loopback head (``local_head="shared"``, as the examples):

- ``ap_operator_shared``: ``RayLocalHeadStartOperator(shared=True)`` then
  ``RayOrchOperator`` on its address (``rayorch_events``' shape).
- ``ap_microbatch_shared``: ``rayorch_microbatch_group(local_head="shared")``.

The benchmark sets ``AP_INPUTS`` (the files' folder), ``AP_OUTPUT`` (Ray Data's output
root), ``AP_RAY_GCS`` and ``AP_RAY_TOKEN_PATH`` (the head's address and token file,
for the plain tasks) and ``AP_BATCH`` (sources per microbatch).
"""

from __future__ import annotations

import os
from typing import Any

import pendulum
from airflow.sdk import DAG, task

from airflow_provider_rayorch.operators.local_head import RayLocalHeadStartOperator
from airflow_provider_rayorch.operators.microbatch import rayorch_microbatch_group
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

INPUTS = os.environ.get("AP_INPUTS", "/tmp/airflow-path-inputs")
SOURCES = f"{INPUTS}/*.txt"
BATCH = int(os.environ.get("AP_BATCH", "8"))
CONN = "rayorch_bench"
PIPELINE = "rayorch_example_pipelines:TextDocPipeline"
# rayorch_ingest's settings: the light stages share one actor process
KWARGS = {"read_files": True, "share_process": "text"}
#: The shared head's CPUs, as the examples ask for it (its first start decides).
SHARED_CPUS = 8
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

with DAG(dag_id="ap_microbatch_resume", **COMMON):
    rayorch_microbatch_group(
        "prepare",
        **RUN,
        deferrable=True,
        sensor_kwargs={"end_from_trigger": False},
        run_sensor_kwargs={"end_from_trigger": False},
    )

with DAG(dag_id="ap_operator_shared", **COMMON):
    head = RayLocalHeadStartOperator(task_id="ray_head", shared=True, num_cpus=SHARED_CPUS)
    head >> RayOrchOperator(
        task_id="prepare", **RUN, ray_address="{{ ti.xcom_pull(task_ids='ray_head')['address'] }}"
    )

with DAG(dag_id="ap_microbatch_shared", **COMMON):
    rayorch_microbatch_group("prepare", **RUN, local_head="shared", local_head_num_cpus=SHARED_CPUS)


def _ray_data(context: dict[str, Any], *, gather: bool) -> dict[str, Any]:
    """Ray Data over the same files, written to ``$AP_OUTPUT/<DAG id>/<run id>``."""
    from benchmarks.airflow_path.work import output_folder, prepare_with_ray_data

    return prepare_with_ray_data(
        SOURCES,
        output_folder(
            os.environ.get("AP_OUTPUT", "/tmp/airflow-path-out"),
            context["ti"].dag_id,
            context["run_id"],
        ),
        address=os.environ.get("AP_RAY_GCS"),
        token_path=os.environ.get("AP_RAY_TOKEN_PATH"),
        gather=gather,
    )


with DAG(dag_id="ap_raydata", **COMMON):

    @task
    def prepare(**context: Any) -> dict[str, Any]:
        """Ray Data, a batch of whole documents at a time."""
        return _ray_data(context, gather=False)

    prepare()

with DAG(dag_id="ap_raydata_groupby", **COMMON):

    @task(task_id="prepare")
    def prepare_gathered(**context: Any) -> dict[str, Any]:
        """Ray Data page by page, the pages gathered per document (``groupby``)."""
        return _ray_data(context, gather=True)

    prepare_gathered()
