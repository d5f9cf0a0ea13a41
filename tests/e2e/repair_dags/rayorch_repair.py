"""Per-microbatch pattern on a loopback head over a deterministic "flaky service"
(``repair_pipelines:Flaky``, its state in ``dag_run.conf["state_dir"]``).

``rayorch_repair``: the repair tests make sources fail on the first attempt, then
clear the red microbatch. ``rayorch_resume``: 8 microbatches with automatic retries;
the resume test kills the run's driver mid-run and lets the retries resume it.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG

from airflow_provider_rayorch.operators.microbatch import rayorch_microbatch_group

with DAG(
    dag_id="rayorch_repair",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["rayorch", "test"],
):
    rayorch_microbatch_group(
        "docs",
        pipeline="repair_pipelines:Flaky",
        pipeline_kwargs={"state_dir": "{{ dag_run.conf['state_dir'] }}"},
        sources=list(range(6)),
        input_batch_size=3,
        local_head=True,
        local_head_num_cpus=2,
        poke_interval=1.0,
    )

with DAG(
    dag_id="rayorch_resume",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    default_args={"retries": 2, "retry_delay": timedelta(seconds=1)},
    tags=["rayorch", "test"],
):
    rayorch_microbatch_group(
        "docs",
        pipeline="repair_pipelines:Flaky",
        pipeline_kwargs={"state_dir": "{{ dag_run.conf['state_dir'] }}"},
        sources=list(range(16)),
        input_batch_size=2,
        local_head=True,
        local_head_num_cpus=2,
        poke_interval=1.0,
    )
