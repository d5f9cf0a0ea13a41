"""A DAG run under the real OpenLineage listener (tests/unit/lineage/test_listener.py):
the embedded driver with the engine's local backend, so no Ray is needed."""

from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG

from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

LANDING = os.environ["LINEAGE_LANDING"]

with DAG("lineage_listener", schedule=None, start_date=pendulum.datetime(2026, 1, 1)):
    RayOrchOperator(
        task_id="prepare",
        pipeline="tests.unit.lineage.lineage_pipelines:PathLengths",
        sources=f"{LANDING}/*/*.pdf",
        input_batch_size=2,
        backend="local",
        run_store=os.environ["LINEAGE_STORE"],
        max_failed_ratio=0.5,
        outputs_asset_alias="lineage-outputs",
    )
