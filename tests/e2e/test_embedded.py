"""(a) The operator on an embedded local Ray, run for real through dag.test()."""

from __future__ import annotations

import pytest
from e2e_helpers import run_dag, run_dirs

from airflow_provider_rayorch.rayorch.store import RunStore

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


def test_embedded_run_returns_lineage_summary(airflow_env, e2e_root) -> None:
    result = run_dag(airflow_env, "e2e_embedded")
    assert result["state"] == "success", result["log"][-4000:]
    summary = result["xcoms"]["docs[-1].return_value"]
    assert summary["state"] == "success"
    assert summary["sources"] == {
        "total": 12,
        "present": 11,
        "dropped": 0,
        "failed": 0,
        "suppressed": 1,
    }
    assert summary["failures"][0]["source"] == 5
    assert [m["index"] for m in summary["microbatches"]] == [0, 1, 2]
    [run_dir] = run_dirs(e2e_root / "embedded-runs")
    store = RunStore(str(e2e_root / "embedded-runs"))
    rows = store.read_outputs(run_dir.name)
    assert [r["source"] for r in rows] == list(range(12))
    assert rows[0]["value"]["pages"] == 1
    # the summary is the run manifest plus the Airflow-side state and the job's status
    assert summary == store.read_run_manifest(run_dir.name) | {
        "state": "success",
        "job_status": "SUCCEEDED",
    }
    assert (run_dir / "report.html").exists()  # the driver wrote the run's HTML report
