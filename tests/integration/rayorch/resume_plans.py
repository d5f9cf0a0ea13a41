"""A written plan of ``fault_udfs.ResumePipeline``, for tests that stop a driver mid-run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.runs.store import PlanRecord

from . import fault_udfs as fu

if TYPE_CHECKING:
    from pathlib import Path

    from airflow_provider_rayorch.runs.store import RunStore

SPEC = "tests.integration.rayorch.fault_udfs:ResumePipeline"


def write_resume_plan(
    store: RunStore,
    tmp_path: Path,
    *,
    mode: str,
    stop: int,
    sources: int,
    batch_size: int,
    **record: Any,
) -> tuple[Path, Path]:
    """Write plan ``run`` of sources 0 to ``sources - 1`` in microbatches of
    ``batch_size`` (``record``: more PlanRecord fields) to ``store``; the pipeline's
    log folder (``tmp_path/log``, made) and gate file (``tmp_path/gate``, not made).

    ``mode`` and ``stop`` say what the pipeline does on row ``stop``: ``block`` until
    the gate file exists, or ``raise``."""
    log_dir, gate = tmp_path / "log", tmp_path / "gate"
    log_dir.mkdir()
    kwargs = {"log_dir": str(log_dir), "mode": mode, "stop": stop, "gate": str(gate)}
    store.write_plan(
        PlanRecord(
            run_id="run",
            pipeline=SPEC,
            fingerprint=fu.ResumePipeline(**kwargs).compile().fingerprint,  # type: ignore[arg-type]
            sources=list(range(sources)),
            input_batch_size=batch_size,
            pipeline_kwargs=kwargs,
            **record,
        )
    )
    return log_dir, gate
