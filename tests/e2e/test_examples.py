"""The README's main job through the ``airflow dags test`` CLI (embedded Ray). The
scheduled ingestion DAG runs on a real deployment: test_deployment_examples.py."""

from __future__ import annotations

import os
import subprocess

import pytest
from e2e_helpers import AIRFLOW, EXAMPLES

pytestmark = [pytest.mark.timeout(400), pytest.mark.slow]


def _examples_env(airflow_env: dict[str, str], **extra: str) -> dict[str, str]:
    env = {**airflow_env, "AIRFLOW__CORE__DAGS_FOLDER": str(EXAMPLES), **extra}
    env.pop("AIRFLOW_CONN_RAYORCH_DEFAULT")  # the README job needs no connection
    return env


def test_readme_main_job(airflow_env) -> None:
    env = _examples_env(airflow_env)
    out = subprocess.run(
        [AIRFLOW, "dags", "test", "rayorch_minimal"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-6000:]
    assert "state=success" in log
    assert "48 sources, 47 present, 0 dropped, 0 failed, 1 suppressed" in log
    assert '"cause": "doc[7]/page[3]: unreadable page"' in log
    runs = os.path.join(env["AIRFLOW_HOME"], "rayorch", "runs")
    assert any(name.startswith("rayorch_minimal.prepare_docs.") for name in os.listdir(runs))
