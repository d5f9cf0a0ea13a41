"""A driver on Ray keeps its log in the run store: its own lines and the lines Ray
forwards from its actors, as plain text, with the secrets it was handed hidden."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import ray

from airflow_provider_rayorch.runs.driver_log import driver_log_names
from airflow_provider_rayorch.runs.secrets import driver_env
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore
from airflow_provider_rayorch.runs.uris import driver_log_parts
from tests.integration.runs.log_udfs import Shouting

ROOT = str(Path(__file__).resolve().parents[3])


@pytest.mark.timeout(240)
@pytest.mark.usefixtures("no_actors_left")
def test_a_driver_on_ray_keeps_its_actors_lines_without_secrets(tmp_path: Path) -> None:
    token = f"shout-{secrets.token_hex(8)}"
    gate = str(tmp_path / "gate")
    store = RunStore(str(tmp_path / "store"))
    store.write_plan(
        PlanRecord(
            run_id="run",
            pipeline="tests.integration.runs.log_udfs:Shouting",
            fingerprint=Shouting(gate).compile().fingerprint,
            sources=[0, 1, 2, 3],
            input_batch_size=2,
            pipeline_kwargs={"gate": gate},
        )
    )
    ray_init = {"runtime_env": {"env_vars": {"PYTHONPATH": ROOT, "SHOUT_TOKEN": token}}}
    env = {**os.environ, "PYTHONPATH": ROOT, **driver_env(None, ray_init)}
    argv = [sys.executable, "-m", "airflow_provider_rayorch.job", "--run-store", store.uri]
    argv += ["--run-id", "run", "--address", ray.get_runtime_context().gcs_address]
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    printed: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            printed.append(line)
            if "shouted 1 with" in line:  # Ray forwarded the actor's line: let it finish
                Path(gate).touch()
        assert proc.wait(timeout=120) == 0, "".join(printed)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert any(token in line for line in printed)  # the process's own output is untouched
    assert driver_log_names(store, "run") == ["driver-1.log"]
    data = store.read_bytes(driver_log_parts("run", 1))
    assert data is not None
    text = data.decode()
    assert "microbatch 2/2 committed" in text
    shouted = [line for line in text.splitlines() if "shouted 1 with" in line]
    assert shouted, text
    assert shouted[0].endswith("shouted 1 with token=***")  # plain text, secret hidden
    assert token not in text
    assert "\x1b" not in text
