"""The failed-ratio verdict is judged once, by the driver, and recorded;
the Airflow layer reads it, and judges from the counts only a summary without one."""

from __future__ import annotations

import pytest

from airflow_provider_rayorch.common.ratio import judge_summary
from airflow_provider_rayorch.runs import driver
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.run_manifest import rewrite_repaired_run_manifest
from tests.unit.runs.plans import write_fake_plan

pytestmark = pytest.mark.timeout(30)

V1_SUMMARY = {  # a summary written by 0.1.0: no verdict
    "run_id": "r",
    "state": "success",
    "sources": {"total": 4, "present": 3, "dropped": 0, "failed": 1, "suppressed": 0},
    "failures": [{"source": 2, "outcome": "failed", "cause": "doc[2]: bad"}],
}


def test_the_driver_records_the_verdict_in_every_summary(tmp_path, fake_engine) -> None:
    store = write_fake_plan(tmp_path, n=6, size=3, poison=[4])
    summary = driver.run_plan(store, "run")
    assert summary["verdict"] == {
        "state": "failed",
        "failed_ratio": round(1 / 6, 6),
        "max_failed_ratio": 0.0,
        "message": "failed ratio 0.167 exceeds max_failed_ratio 0.0: source 4: doc[4]: poisoned",
    }
    assert plain(store.run_manifest_record("run"))["verdict"] == summary["verdict"]
    first, second = plain(store.manifest_record("run", 0)), plain(store.manifest_record("run", 1))
    assert first["verdict"]["state"] == first["state"] == "success"
    assert first["verdict"]["message"] is None
    assert second["verdict"]["state"] == second["state"] == "failed"


def test_the_recorded_verdict_is_read_not_judged_again() -> None:
    recorded = {
        **V1_SUMMARY,
        "state": "failed",
        "verdict": {
            "state": "failed",
            "failed_ratio": 0.25,
            "max_failed_ratio": 0.5,
            "message": "as the driver judged it",
        },
    }
    verdict = judge_summary(recorded, 0.5)
    assert (verdict.summary["state"], verdict.message) == ("failed", "as the driver judged it")


def test_a_summary_without_a_verdict_is_judged_from_its_counts() -> None:
    failed = judge_summary(V1_SUMMARY, 0.0)
    assert failed.summary["state"] == "failed"
    assert failed.message == (
        "failed ratio 0.250 exceeds max_failed_ratio 0.0: source 2: doc[2]: bad"
    )
    assert judge_summary(V1_SUMMARY, 0.25).ok


def test_a_repaired_runs_manifest_is_rewritten_by_the_run_layer_with_its_verdict(
    tmp_path, fake_engine
) -> None:
    store = write_fake_plan(tmp_path, n=6, size=3, poison=[4])
    driver.run_plan(store, "run")
    manifest = plain(store.manifest_record("run", 1))
    fixed = {"total": 3, "present": 3, "dropped": 0, "failed": 0, "suppressed": 0}
    store.commit_microbatch(
        "run", 1, {**manifest, "sources": fixed, "failures": [], "state": "success", "attempt": 2}
    )
    result = rewrite_repaired_run_manifest(store, "run", 0.0)
    assert result["verdict"]["state"] == result["state"] == "success"
    assert result["repairs"] == []
    assert plain(store.run_manifest_record("run")) == result
