"""Airflow maps at most ``[core] max_map_length`` task instances per expansion: a run
with more source microbatches than that fails before anything is submitted, with an
error naming the count, the setting and the smallest ``input_batch_size`` that fits.

Literal sources are counted when the DAG is parsed; a glob or template only at submit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_rayorch.runs.records import microbatch_count

__all__ = ["literal_source_count", "max_map_length", "too_many_microbatches"]

_DEFAULT = 1024


def max_map_length() -> int:
    """Airflow's ``[core] max_map_length`` (1,024 by default)."""
    from airflow.sdk.configuration import conf

    return conf.getint("core", "max_map_length", fallback=_DEFAULT)


def literal_source_count(sources: Any) -> int | None:
    """How many sources a literal list or mapping of columns holds; None for a glob or
    a template (counted only when the submit task lists it)."""
    if isinstance(sources, str) or sources is None:
        return None
    if isinstance(sources, Mapping):
        columns = list(sources.values())
        return len(columns[0]) if columns and hasattr(columns[0], "__len__") else None
    return len(sources) if isinstance(sources, list | tuple) else None


def too_many_microbatches(
    total_sources: int, input_batch_size: int | None, where: str
) -> str | None:
    """The error for ``total_sources`` in microbatches of ``input_batch_size`` when they
    are more than Airflow can map; None when they fit."""
    limit = max_map_length()
    count = microbatch_count(total_sources, input_batch_size)
    if count <= limit:
        return None
    smallest = -(-total_sources // max(limit, 1))
    return (
        f"{where}: {total_sources} sources make {count} microbatches of input_batch_size="
        f"{input_batch_size}, more than Airflow maps in one expansion ([core] "
        f"max_map_length = {limit}). Pass input_batch_size={smallest} or larger, or raise "
        f"max_map_length to at least {count} (airflow.cfg [core] max_map_length, or the "
        "environment variable AIRFLOW__CORE__MAX_MAP_LENGTH, on the scheduler, DAG "
        "processor and workers). Nothing was submitted."
    )
