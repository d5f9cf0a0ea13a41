"""Run an example DAG through the README's main-job command (``dag.test()`` in a fresh
Airflow home), in a folder of the test's own. Everything else, ``HOME`` and any Ray
variable included, is the user's environment: the DAGs must work as they are.
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

from airflow_provider_rayorch.common import head_logs

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "dags_examples"
MAIN_JOB = ROOT / "scripts" / "main-job.sh"

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
        """stdout (with each failed task's exception, printed by the main job), the
        logs of the loopback heads that failed (kept by ``$RAYORCH_HEAD_LOG_ARCHIVE``),
        and the log's tail."""
        heads = head_logs.digest(self.output / "head-logs", every=True)
        return f"stdout:\n{self.stdout}\n{heads}\nlog tail:\n{self.log[-3000:]}"


@pytest.fixture
def main_job(tmp_path: Path):
    """``main_job(dag_id)`` runs the README's main job, ``bash scripts/main-job.sh
    DAG_ID``, as written, in the user's environment (``HOME`` and any Ray variable
    included; Airflow's own variables left out, as on a fresh machine) with its output
    folder (``RAYORCH_OUTPUT``) under ``tmp_path``."""

    def run(dag_id: str, timeout: float = 260) -> DagRun:
        output = tmp_path / "rayorch-output"
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
        env.update(
            RAYORCH_OUTPUT=str(output),
            AIRFLOW__OPENLINEAGE__DISABLED="true",
            # the logs of the heads the run stops, kept for `DagRun.explain`
            RAYORCH_HEAD_LOG_ARCHIVE=str(output / "head-logs"),
        )
        proc = subprocess.run(
            ["bash", str(MAIN_JOB), dag_id],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        log, result = output / "main-job.log", output / "last-run.json"
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
