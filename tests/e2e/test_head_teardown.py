"""Two repairs in a row on a loopback head leave no head running.

``rayorch_repair`` (a ``local_head=True`` group) fails both its microbatches; the test
clears microbatch 0 as docs/airflow/repair.md says, which re-runs the group's
``ray_head`` setup, and clears microbatch 1 while that setup is still starting its
head: Airflow kills that ``ray_head`` try and runs it again. When the run has ended
(and its ``stop_ray_head`` teardown with it) no process of any head the run's
``ray_head`` tries started may be left. The heads are the ones the deployment's tasks
recorded in ``$AIRFLOW_HOME/deployment/ray-heads`` (the components'
``RAYORCH_LOCAL_HEADS_DIR``).
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING, Any

import psutil
import pytest
from e2e_runs import failure_digest

from airflow_provider_rayorch.common import local_heads

if TYPE_CHECKING:
    from pathlib import Path

    from deployment import Deployment
    from rest import AirflowRest

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

DAG_ID = "rayorch_repair"
MB = "docs.microbatch"
HEAD = ("docs.ray_head", -1)


def _members(pgid: int) -> list[str]:
    found = []
    for proc in psutil.process_iter(["status"]):
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(" ".join(proc.cmdline()[:2]))
    return found


def _try_of(rest: AirflowRest, run_id: str, key: tuple[str, int]) -> dict[str, Any]:
    return dict(rest.task_instances(DAG_ID, run_id)[key])


def test_a_second_clear_while_the_head_starts_leaves_no_head_running(
    airflow_deployment: Deployment, airflow_rest: AirflowRest, monkeypatch
) -> None:
    rest = airflow_rest
    heads_dir: Path = airflow_deployment.airflow_home / "deployment" / "ray-heads"
    monkeypatch.setenv("RAYORCH_LOCAL_HEADS_DIR", str(heads_dir))
    rest.wait_for_dag(DAG_ID, timeout=120)
    rest.unpause(DAG_ID)
    state = airflow_deployment.root / "two-clears"
    state.mkdir()
    for marker in ("fail-1", "fail-4"):  # a source of each microbatch fails
        (state / marker).touch()
    run_id = rest.trigger(DAG_ID, conf={"state_dir": str(state)})["dag_run_id"]
    run = rest.wait_for_run(DAG_ID, run_id, 300)
    assert run["state"] == "failed", failure_digest(rest, DAG_ID, run_id)
    key = local_heads.run_key(DAG_ID, run_id, HEAD[0])
    seen = {h.pgid for h in local_heads.started_heads(key)}
    for marker in ("fail-1", "fail-4"):
        (state / marker).unlink()

    tries = _try_of(rest, run_id, HEAD)["try_number"]
    rest.clear(DAG_ID, run_id, [(MB, 0)], include_downstream=True)
    # the setup's next try has made its head's process group, which is not up yet
    while True:
        starting = [h for h in local_heads.started_heads(key) if not h.up]
        seen |= {h.pgid for h in local_heads.started_heads(key)}
        if starting:
            break
        time.sleep(0.1)
    assert _try_of(rest, run_id, HEAD)["try_number"] > tries
    rest.clear(DAG_ID, run_id, [(MB, 1)], include_downstream=True)

    def ended() -> bool:
        seen.update(h.pgid for h in local_heads.started_heads(key))
        tis = rest.task_instances(DAG_ID, run_id)
        stop = tis[("docs.stop_ray_head", -1)]
        finished = rest.run(DAG_ID, run_id)["state"] in ("success", "failed")
        return finished and stop["state"] in ("success", "failed", "skipped")

    rest.wait(ended, 400, "the run after two clears to end")
    # the second clear restarted the setup that was starting its head
    assert _try_of(rest, run_id, HEAD)["try_number"] >= tries + 2
    # the killed try's head and the one the run used
    assert len(seen) >= 2, (seen, failure_digest(rest, DAG_ID, run_id))
    left = {pgid: m for pgid in sorted(seen) if (m := _members(pgid))}
    assert not left, f"heads left running after the teardown: {left}"
    assert local_heads.started_heads(key) == []
