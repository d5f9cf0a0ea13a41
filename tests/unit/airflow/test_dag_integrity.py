"""Every example DAG imports cleanly, without starting Ray at parse time."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

EXAMPLES = Path(__file__).resolve().parents[3] / "dags_examples"


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    sys.path.insert(0, str(EXAMPLES))
    try:
        yield DagBag(dag_folder=str(EXAMPLES))
    finally:
        sys.path.remove(str(EXAMPLES))


def test_no_import_errors(dagbag) -> None:
    assert dagbag.import_errors == {}


def test_expected_dags(dagbag) -> None:
    assert {"rayorch_minimal", "rayorch_ingest"} <= set(dagbag.dag_ids)


def test_ray_not_initialized_at_parse_time(tmp_path: Path) -> None:
    """Parse the examples in a fresh interpreter (other tests may run a Ray here)."""
    import os
    import subprocess

    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from airflow.dag_processing.dagbag import DagBag\n"
        "bag = DagBag(dag_folder=sys.argv[1])\n"
        "ray = sys.modules.get('ray')\n"
        "print('RAY_STARTED', bool(ray and ray.is_initialized()), len(bag.dag_ids))\n"
    )
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path), "RAY_ADDRESS": ""}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(EXAMPLES)],
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RAY_STARTED")), "")
    assert line.startswith("RAY_STARTED False"), proc.stdout[-2000:] + proc.stderr[-2000:]


def test_ingest_dag_wires_microbatch_pattern(dagbag) -> None:
    dag = dagbag.dags["rayorch_ingest"]
    ids = set(dag.task_ids)
    assert {
        "ingest.ray_head",
        "ingest.submit",
        "ingest.microbatch",
        "ingest.run",
        "report",
    } <= ids
    # the machine's shared head: found (or started once) by ray_head, stopped by no task
    assert dag.get_task("ingest.ray_head").shared is True
    assert "ingest.stop_ray_head" not in ids
    assert dag.get_task("ingest.microbatch").map_index_template
