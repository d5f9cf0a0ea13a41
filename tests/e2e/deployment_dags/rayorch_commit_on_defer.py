"""Mapped microbatch sensors whose manifests commit the moment each one defers.

The test writes a sensor's manifest as soon as the REST API shows its task instance
deferred (``dag_run.conf["run_store"]``), so each trigger finds it on its first look,
seconds after the deferral: the timing under which Airflow 3.3's scheduler fails a
resumed try as a "state mismatch" (apache/airflow#72716). Microbatch 0's manifest
fails the bar, so one task ends failed, from the triggerer too. ``summary_types``
reads every sensor's XCom summary as a downstream task does.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, task

from airflow_provider_rayorch.sensors.rayorch import (
    MICROBATCH_MAP_INDEX_TEMPLATE,
    RayOrchMicrobatchSensor,
)

#: Mapped sensors; with parallelism 6 they defer in waves, each wave a chance to race.
SENSORS = 24
RUN_ID = "commit-on-defer"
MAX_FAILED_RATIO = 0.25

with DAG(
    dag_id="rayorch_commit_on_defer",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["rayorch", "test"],
):
    sensors = RayOrchMicrobatchSensor.partial(
        task_id="microbatch",
        run_id=RUN_ID,
        run_store="{{ dag_run.conf['run_store'] }}",
        max_failed_ratio=MAX_FAILED_RATIO,
        poke_interval=1.0,
        map_index_template=MICROBATCH_MAP_INDEX_TEMPLATE,
    ).expand(microbatch=[{"index": i, "first_source": 4 * i, "count": 4} for i in range(SENSORS)])

    @task(trigger_rule="all_done")
    def summary_types(summaries: list[object]) -> list[str]:
        """The type of each sensor's summary, as a downstream task pulls it."""
        return [type(s).__name__ for s in summaries]

    summary_types(sensors.output)
