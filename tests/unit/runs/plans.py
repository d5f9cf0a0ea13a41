"""A written plan of a ``fake_pipelines`` pipeline (the fake engine's ``Square`` by default)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.runs import pipeline_load
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

if TYPE_CHECKING:
    from collections.abc import Iterable


def write_fake_plan(
    tmp_path: Any,
    *,
    n: int = 7,
    size: int = 3,
    poison: Iterable[int] = (),
    pipeline: str = "fake_pipelines:Square",
) -> RunStore:
    """The store at ``tmp_path`` holding plan ``run``: sources 0 to ``n - 1`` in
    microbatches of ``size``, the pipeline failing the ``poison`` sources."""
    store = RunStore(str(tmp_path))
    fingerprint = pipeline_load.import_factory(pipeline)(poison=list(poison)).compile().fingerprint
    store.write_plan(
        PlanRecord(
            run_id="run",
            pipeline=pipeline,
            fingerprint=fingerprint,
            sources=list(range(n)),
            input_batch_size=size,
            pipeline_kwargs={"poison": list(poison)},
        )
    )
    return store
