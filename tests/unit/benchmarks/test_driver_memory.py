"""``benchmarks.driver_memory --job`` runs the real job entrypoint as a process of its
own and reports that process's peak RSS, not the planner's."""

from __future__ import annotations

import argparse

from airflow_provider_rayorch.runs.store import RunStore
from benchmarks.driver_memory import run_job

#: what the caller holds while the job runs (MB): more than a whole job driver's peak
CALLER_MB = 512


def test_the_job_point_reports_the_entrypoints_own_peak(tmp_path) -> None:
    args = argparse.Namespace(
        job=str(tmp_path / "store"),
        backend="local",
        sources=300,
        input_batch_size=100,
        max_active=2,
        batch_size=64,
    )
    held = bytearray(CALLER_MB * 2**20)  # zero-filled: every page touched

    figures = run_job(args)

    assert len(held) == CALLER_MB * 2**20
    assert 0 < figures["driver_peak_rss_mb"] < CALLER_MB
    manifest = RunStore(args.job).run_manifest_record(figures["job"])
    assert manifest is not None
    assert manifest.state == "success"
    assert manifest.sources is not None
    assert manifest.sources.total == 300
