"""Triggers of run ``r`` that end their task in the triggerer (``end_from_trigger``),
polling their run store every 10 ms."""

from __future__ import annotations

from typing import Any

from airflow_provider_rayorch.triggers.rayorch import RayOrchJobTrigger, RayOrchMicrobatchTrigger


def ending_microbatch_trigger(
    run_store: Any, index: int, max_failed_ratio: float, **kwargs: Any
) -> RayOrchMicrobatchTrigger:
    """A microbatch trigger for microbatch ``index`` of run ``r`` with the sensor's bar."""
    return RayOrchMicrobatchTrigger(
        run_id="r",
        run_store=str(run_store),
        index=index,
        poll_interval=0.01,
        max_failed_ratio=max_failed_ratio,
        end_from_trigger=True,
        **kwargs,
    )


def ending_job_trigger(run_store: Any, max_failed_ratio: float) -> RayOrchJobTrigger:
    """A job trigger for job ``j`` of run ``r`` with the run sensor's bar, tailing no logs."""
    return RayOrchJobTrigger(
        job_id="j",
        run_id="r",
        run_store=str(run_store),
        poll_interval=0.01,
        tail_logs=False,
        max_failed_ratio=max_failed_ratio,
        end_from_trigger=True,
    )
