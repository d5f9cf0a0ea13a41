"""The real OpenLineage listener: ``airflow dags test`` of a RayOrchOperator (embedded
driver, the engine's local backend: no Ray) with OpenLineage's file transport. The
events it writes carry the input location, the run's outputs folder and the
``rayorch`` facet, hold no secret, and pass the checks of ``events.check_event``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import SECRETS, landing
from .events import check_event, facet_of, inputs_of, outputs_of

pytest.importorskip("airflow.providers.openlineage")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

ROOT = Path(__file__).resolve().parents[3]
AIRFLOW = str(Path(sys.executable).with_name("airflow"))


def _run(argv: list[str], env: dict[str, str], timeout: float) -> None:
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]


def test_the_listener_emits_the_runs_lineage(tmp_path) -> None:
    files = landing(tmp_path, {"a": 3, "b": 1})
    events_file = tmp_path / "events.jsonl"
    store = tmp_path / "store"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "OPENLINEAGE"))}
    env.update(
        AIRFLOW_HOME=str(tmp_path / "airflow-home"),
        AIRFLOW__CORE__DAGS_FOLDER=str(Path(__file__).with_name("dags")),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__UNIT_TEST_MODE="False",
        AIRFLOW__OPENLINEAGE__NAMESPACE="lineage-test",
        AIRFLOW__OPENLINEAGE__TRANSPORT=json.dumps(
            {"type": "file", "log_file_path": str(events_file), "append": True}
        ),
        # a secret the task's environment holds: it must reach no event
        RAYORCH_TEST_SECRET=SECRETS["env_var"],
        LINEAGE_LANDING=str(tmp_path / "landing"),
        LINEAGE_STORE=str(store),
        PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests" / "unit" / "airflow")]),
        RAY_USAGE_STATS_ENABLED="0",
    )
    _run([AIRFLOW, "db", "migrate"], env, 240)
    _run([AIRFLOW, "dags", "test", "lineage_listener"], env, 240)

    text = events_file.read_text()
    assert SECRETS["env_var"] not in text
    events = [json.loads(line) for line in text.splitlines() if line.strip()]
    task_events = [e for e in events if e["job"]["name"] == "lineage_listener.prepare"]
    assert [e["eventType"] for e in task_events] == ["START", "COMPLETE"]
    for event in task_events:
        check_event(event)
    complete = task_events[-1]
    assert inputs_of(complete) == {("file", str(tmp_path / "landing")): len(files)}
    (output,) = outputs_of(complete)
    assert output[0] == "file"
    assert output[1].startswith(f"{store}/lineage_listener.prepare.")
    assert output[1].endswith("/outputs")
    facet = facet_of(complete)
    assert facet["sources"]["total"] == len(files)
    assert facet["state"] == "success"
