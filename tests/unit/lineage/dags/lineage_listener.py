"""A DAG run under the real OpenLineage listener (tests/unit/lineage/test_listener.py):
the operator runs the embedded driver with the engine's local backend (no Ray), then
mapped microbatch sensors and the run sensor find its committed records at once."""

from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG

from airflow_provider_rayorch.operators.rayorch import RayOrchOperator
from airflow_provider_rayorch.sensors.rayorch import RayOrchMicrobatchSensor, RayOrchRunSensor

LANDING = os.environ["LINEAGE_LANDING"]
SOURCES = int(os.environ["LINEAGE_SOURCES"])
BATCH = 2


def _pull(key: str) -> str:
    return f"{{{{ ti.xcom_pull(task_ids='prepare', key='{key}') }}}}"


with DAG("lineage_listener", schedule=None, start_date=pendulum.datetime(2026, 1, 1)):
    prepare = RayOrchOperator(
        task_id="prepare",
        pipeline="tests.unit.lineage.lineage_pipelines:PathLengths",
        sources=f"{LANDING}/*/*.pdf",
        input_batch_size=BATCH,
        backend="local",
        run_store=os.environ["LINEAGE_STORE"],
        max_failed_ratio=0.5,
        outputs_asset_alias="lineage-outputs",
    )
    common = {"run_id": _pull("rayorch_run_id"), "run_store": _pull("rayorch_run_store")}
    microbatches = [
        {"index": i, "first_source": first, "count": min(BATCH, SOURCES - first)}
        for i, first in enumerate(range(0, SOURCES, BATCH))
    ]
    sensors = RayOrchMicrobatchSensor.partial(
        task_id="microbatch", max_failed_ratio=0.5, **common
    ).expand(microbatch=microbatches)
    run = RayOrchRunSensor(task_id="run", max_failed_ratio=0.5, **common)
    prepare >> sensors >> run
