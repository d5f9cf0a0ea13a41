"""A written plan of the ``repair_pipelines:Flaky`` pipeline (real engine, local backend)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_rayorch.runs import pipeline_load
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

if TYPE_CHECKING:
    from pathlib import Path

SPEC = "repair_pipelines:Flaky"


def write_flaky_plan(
    tmp_path: Path, run_id: str, sources: int, batch_size: int
) -> tuple[RunStore, Path]:
    """The store (``tmp_path/store``) holding a plan of ``sources`` sources (0, 1, ...)
    in microbatches of ``batch_size``, and the pipeline's state folder
    (``tmp_path/state``, empty)."""
    state = tmp_path / "state"
    state.mkdir()
    store = RunStore(str(tmp_path / "store"))
    compiled = pipeline_load.import_factory(SPEC)(state_dir=str(state)).compile()
    store.write_plan(
        PlanRecord(
            run_id=run_id,
            pipeline=SPEC,
            fingerprint=compiled.fingerprint,
            sources=list(range(sources)),
            input_batch_size=batch_size,
            pipeline_kwargs={"state_dir": str(state)},
            backend="local",
            semantic_fingerprint=compiled.semantic_fingerprint,
            semantic=compiled.semantic_record(),
        )
    )
    return store, state
