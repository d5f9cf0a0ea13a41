"""Written plans and runs for the Airflow-layer tests: a ``repair_pipelines:Flaky`` plan,
and a finished ``fake_pipelines:Square`` run (real engine, local backend)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_rayorch.runs import driver, pipeline_load
from airflow_provider_rayorch.runs.boundary import plain
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


def write_finished_run(store_dir: Path | str, job_status: str | None = None) -> RunStore:
    """A run ``run`` of ``fake_pipelines:Square`` over sources 1 and 2, driven to its end
    in ``store_dir``; with ``job_status``, its run manifest says that job status."""
    store = RunStore(str(store_dir))
    spec = "fake_pipelines:Square"
    fingerprint = pipeline_load.import_factory(spec)().compile().fingerprint
    store.write_plan(
        PlanRecord(run_id="run", pipeline=spec, fingerprint=fingerprint, sources=[1, 2])
    )
    driver.run_plan(store, "run")
    if job_status is not None:
        manifest = plain(store.run_manifest_record("run"))
        assert manifest is not None
        store.write_run_manifest("run", {**manifest, "job_status": job_status})
    return store
