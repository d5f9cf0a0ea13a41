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
    files = [*landing(tmp_path, {"a": 3, "b": 1}), str(tmp_path / "landing" / "b" / "bad.pdf")]
    (tmp_path / "landing" / "b" / "bad.pdf").write_bytes(b"%PDF")
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
        LINEAGE_SOURCES=str(len(files)),
        PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests" / "unit" / "airflow")]),
        RAY_USAGE_STATS_ENABLED="0",
    )
    _run([AIRFLOW, "db", "migrate"], env, 240)
    _run([AIRFLOW, "dags", "test", "lineage_listener"], env, 240)

    text = events_file.read_text()
    assert SECRETS["env_var"] not in text
    events = [json.loads(line) for line in text.splitlines() if line.strip()]
    by_job: dict[str, list[dict]] = {}
    for event in events:
        by_job.setdefault(event["job"]["name"], []).append(event)
    landing_dir = ("file", str(tmp_path / "landing"))

    prepare = by_job["lineage_listener.prepare"]
    assert [e["eventType"] for e in prepare] == ["START", "COMPLETE"]
    complete = prepare[-1]
    assert inputs_of(complete) == {landing_dir: len(files)}
    (output,) = outputs_of(complete)
    assert output[0] == "file"
    assert output[1].startswith(f"{store}/lineage_listener.prepare.")
    assert output[1].endswith("/outputs")
    facet = facet_of(complete)
    assert facet["sources"]["total"] == len(files)
    assert facet["sources"]["failed"] == 1
    assert facet["state"] == "success"

    # each mapped microbatch task: its own facet, its own sources in the run's location
    microbatch = [e for e in by_job["lineage_listener.microbatch"] if e["eventType"] == "COMPLETE"]
    facets = sorted((facet_of(e) for e in microbatch), key=lambda f: f["microbatch"]["index"])
    assert [f["microbatch"]["count"] for f in facets] == [2, 2, 1]
    assert [f["sources"]["failed"] for f in facets] == [0, 1, 0]
    assert sorted(inputs_of(e)[landing_dir] for e in microbatch) == [1, 2, 2]
    run = [e for e in by_job["lineage_listener.run"] if e["eventType"] == "COMPLETE"]
    (run_event,) = run
    assert facet_of(run_event)["sources"] == facet["sources"]
    sensors = by_job["lineage_listener.microbatch"] + by_job["lineage_listener.run"]
    assert {e["eventType"] for e in sensors} == {"START", "COMPLETE"}
    for event in [*prepare, *sensors]:
        check_event(event)
    for event in [complete, *sensors]:  # the operator's START knew only a glob
        assert outputs_of(event) == [output]
