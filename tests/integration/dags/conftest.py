"""Run an example DAG with ``dag.test()`` in a fresh process, as the main job does.

Each test gets its own ``AIRFLOW_HOME`` (a migrated SQLite database, shared by the
module's tests) and its own examples output folder. Everything else, ``HOME`` and
any Ray variable included, is the user's environment: the DAGs must work as they are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "dags_examples"
RUNNER = ROOT / "scripts" / "run_example_dag.py"
AIRFLOW = str(Path(sys.executable).with_name("airflow"))

sys.path.insert(0, str(EXAMPLES))


@dataclass
class DagRun:
    """What ``scripts/run_example_dag.py`` printed and recorded for one run."""

    returncode: int
    stdout: str
    log: str
    result: dict[str, Any]
    output: Path

    def returned(self, task: str) -> Any:
        return self.result["xcoms"][f"{task}[-1].return_value"]

    def explain(self) -> str:
        return f"stdout:\n{self.stdout}\nlog tail:\n{self.log[-6000:]}"


@pytest.fixture(scope="module")
def airflow_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The user's environment with its own migrated Airflow home and the examples folder."""
    home = tmp_path_factory.mktemp("airflow-home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__DAGS_FOLDER=str(EXAMPLES),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__UNIT_TEST_MODE="False",
        AIRFLOW__OPENLINEAGE__DISABLED="true",
        RAY_USAGE_STATS_ENABLED="0",
        PYTHONPATH=os.pathsep.join([str(EXAMPLES), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    migrate = subprocess.run(
        [AIRFLOW, "db", "migrate"], env=env, capture_output=True, text=True, timeout=180
    )
    assert migrate.returncode == 0, migrate.stdout[-3000:] + migrate.stderr[-3000:]
    return env


@pytest.fixture
def run_example(airflow_env: dict[str, str], tmp_path: Path):
    """``run_example(dag_id)`` runs the DAG with its output under ``tmp_path``."""

    def run(dag_id: str, timeout: float = 200) -> DagRun:
        output = tmp_path / "rayorch-output"
        log, result = tmp_path / "run.log", tmp_path / "result.json"
        env = {**airflow_env, "RAYORCH_EXAMPLES_OUTPUT": str(output)}
        proc = subprocess.run(
            [sys.executable, str(RUNNER), dag_id, "--log", str(log), "--result", str(result)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        text = log.read_text() if log.exists() else ""
        assert result.exists(), f"no result file:\n{proc.stdout}\n{proc.stderr}\n{text[-6000:]}"
        return DagRun(proc.returncode, proc.stdout, text, json.loads(result.read_text()), output)

    return run


def live_group_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` still alive (zombies do not count)."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(entry))
    return alive
