"""The per-microbatch pattern on a loopback head with a job that commits nothing until
the test opens a gate file (``dag_run.conf["gate"]``; microbatch 0 waits for
``dag_run.conf["first_gate"]``): every microbatch sensor finds no manifest, defers, and
its trigger must fire in the real triggerer, microbatch 0's while the job still runs."""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_provider_rayorch.operators.microbatch import rayorch_microbatch_group

with DAG(
    dag_id="rayorch_gated",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["rayorch", "test"],
):
    rayorch_microbatch_group(
        "docs",
        pipeline="e2e_pipelines:Gated",
        pipeline_kwargs={
            "gate": "{{ dag_run.conf['gate'] }}",
            # microbatch 0's sources wait for a gate of their own
            "first_gate": "{{ dag_run.conf['first_gate'] }}",
            "first": [f"doc {i}" for i in range(4)],
            # the run starts with its test module's other runs, before this test opens
            "timeout_s": 600.0,
        },
        sources=[f"doc {i}" for i in range(12)],
        input_batch_size=4,
        local_head="shared",
        local_head_num_cpus=8,
        poke_interval=1.0,
    )
