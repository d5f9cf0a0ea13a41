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


def _flaky_docs(sources: int, batch_size: int) -> None:
    """The microbatch group ``docs`` of the Flaky pipeline over sources 0 to
    ``sources - 1`` on a loopback head."""
    rayorch_microbatch_group(
        "docs",
        pipeline="repair_pipelines:Flaky",
        pipeline_kwargs={"state_dir": "{{ dag_run.conf['state_dir'] }}"},
        sources=list(range(sources)),
        input_batch_size=batch_size,
        local_head=True,
        local_head_num_cpus=2,
        poke_interval=1.0,
    )


with DAG(
    dag_id="rayorch_repair",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["rayorch", "test"],
):
    _flaky_docs(sources=6, batch_size=3)

with DAG(
    dag_id="rayorch_resume",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    default_args={"retries": 2, "retry_delay": timedelta(seconds=1)},
    tags=["rayorch", "test"],
):
    _flaky_docs(sources=16, batch_size=2)
