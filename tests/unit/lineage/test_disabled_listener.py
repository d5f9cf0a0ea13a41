"""Installed but disabled, the OpenLineage provider registers no listener, so the
sensors keep ending in the triggerer (``end_from_trigger``); enabled, it does."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("airflow.providers.openlineage")
pytestmark = pytest.mark.timeout(120)

PROBE = (
    "from airflow_provider_rayorch.sensors.rayorch import RayOrchRunSensor\n"
    "s = RayOrchRunSensor(task_id='run', run_id='r', run_store='/tmp/x')\n"
    "print('end_from_trigger', s.end_from_trigger)\n"
)


def _end_from_trigger(tmp_path, **settings: str) -> bool:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "OPENLINEAGE"))}
    env.update(
        AIRFLOW_HOME=str(tmp_path),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        # a transport configured, as on a deployment that runs OpenLineage
        AIRFLOW__OPENLINEAGE__TRANSPORT='{"type": "console"}',
        **settings,
    )
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=100
    )
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(x for x in out.stdout.splitlines() if x.startswith("end_from_trigger"))
    return line.split()[1] == "True"


def test_disabled_registers_no_listener(tmp_path) -> None:
    assert _end_from_trigger(tmp_path, AIRFLOW__OPENLINEAGE__DISABLED="true")


def test_enabled_registers_its_listener(tmp_path) -> None:
    assert not _end_from_trigger(tmp_path)


def test_the_test_environments_disable_it(tmp_path, monkeypatch) -> None:
    """The unit and integration conftests and the e2e deployment's environment."""
    from pathlib import Path

    assert os.environ["AIRFLOW__OPENLINEAGE__DISABLED"] == "true"
    e2e = Path(__file__).resolve().parents[2] / "e2e"
    monkeypatch.syspath_prepend(str(e2e))
    from deployment import deployment_env

    assert deployment_env(tmp_path, tmp_path)["AIRFLOW__OPENLINEAGE__DISABLED"] == "true"
