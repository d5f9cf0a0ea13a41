"""The example DAGs, run for real: the README's main job (through the ``airflow dags
test`` CLI, embedded Ray) and the scheduled ingestion DAG (loopback head as
setup/teardown, per-microbatch tasks, a downstream task reading the outputs)."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime, timedelta

import pytest
from e2e_helpers import AIRFLOW, EXAMPLES, run_dag

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


def test_scheduled_ingestion_dag(airflow_env, e2e_root) -> None:
    landing = e2e_root / "landing"
    landing.mkdir()
    # a manual run of an hourly DAG covers the last complete hour
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    inside = (hour - timedelta(minutes=30)).timestamp()
    outside = (hour - timedelta(hours=3)).timestamp()
    for i in range(10):
        path = landing / f"doc{i:02d}.txt"
        path.write_text(f"page one of {i}\fpage two" + (" POISON" if i == 6 else ""))
        os.utime(path, (inside, inside))
    stale = landing / "old.txt"
    stale.write_text("landed long ago")
    os.utime(stale, (outside, outside))
    env = _examples_env(airflow_env, RAYORCH_LANDING=str(landing), RAY_AUTH_MODE="disabled")
    env["AIRFLOW_CONN_RAYORCH_DEFAULT"] = airflow_env["AIRFLOW_CONN_RAYORCH_DEFAULT"]
    result = run_dag(env, "rayorch_ingest", timeout=360)
    tasks, xcoms = result["tasks"], result["xcoms"]
    assert result["state"] == "success", result["log"][-6000:]
    assert xcoms["ingest.submit[-1].return_value"] == [
        {"index": 0, "first_source": 0, "count": 4},
        {"index": 1, "first_source": 4, "count": 4},
        {"index": 2, "first_source": 8, "count": 2},
    ]
    assert [tasks[f"ingest.microbatch[{i}]"]["state"] for i in range(3)] == ["success"] * 3
    assert xcoms["ingest.microbatch[1].return_value"]["failures"][0]["source"] == 6
    assert tasks["ingest.stop_ray_head[-1]"]["state"] == "success"
    assert xcoms["report[-1].return_value"]["documents"] == 9
    head = xcoms["ingest.ray_head[-1].return_value"]
    assert live_members(head["pgid"]) == []  # the head's process group is gone


def live_members(pgid: int, wait_s: float = 30.0) -> list[int]:
    """Processes of group ``pgid`` that are still alive (zombies, which a container's
    init may never reap, do not count), after waiting up to ``wait_s`` for them to exit."""
    import time

    deadline = time.monotonic() + wait_s
    while True:
        alive = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            state, group = fields[0], int(fields[2])
            if group == pgid and state != "Z":
                alive.append(int(entry))
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)
