"""The machine's shared loopback head on real Ray heads (operators/shared_head.py):
runs starting together share one, a head killed between runs is replaced, and
``scripts/deployment.py stop`` stops it and no other Ray on the machine."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.common import local_heads
from airflow_provider_rayorch.operators import local_head
from airflow_provider_rayorch.operators._head_groups import group_members
from airflow_provider_rayorch.operators._head_start import answers_jobs
from tests.processes import run_in_own_session

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
#: A busy machine starts a head slowly: the test's timeout bounds it, not this.
START_S = 300

#: One run's look for the shared head, in a process of its own.
FIND = """
import json
from airflow_provider_rayorch.operators.local_head import shared_head
head = shared_head(num_cpus=2, timeout={timeout})
print(json.dumps({{"pgid": head.info["pgid"], "address": head.info["address"],
                   "started": head.started}}))
"""


def _group_alive(pgid: int) -> bool:
    """A live (not zombie) process is in group ``pgid`` (this test started the heads:
    a stopped one's leader stays a zombie until reaped)."""
    return bool(group_members(pgid))


@pytest.fixture
def heads_dir(tmp_path: Path, monkeypatch) -> Iterator[Path]:
    """The deployment's heads directory (``<AIRFLOW_HOME>/deployment/ray-heads``); the
    shared head stopped at the end whatever happened."""
    for var in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    folder = tmp_path / "airflow-home" / "deployment" / "ray-heads"
    monkeypatch.setenv("RAYORCH_LOCAL_HEADS_DIR", str(folder))
    monkeypatch.setenv("RAYORCH_SHARED_HEAD_IDLE_S", "3600")
    yield folder
    local_head.stop_shared_head(timeout=5)


def _find_in_process(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", FIND.format(timeout=START_S)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def test_runs_starting_together_share_one_head(heads_dir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [_find_in_process(env) for _ in range(2)]
    found = []
    for run in runs:
        out, err = run.communicate(timeout=START_S + 60)
        assert run.returncode == 0, err
        found.append(json.loads(out.strip().splitlines()[-1]))
    assert found[0]["pgid"] == found[1]["pgid"], found
    assert found[0]["address"] == found[1]["address"], found
    assert sorted(f["started"] for f in found) == [False, True], found
    record = local_heads.read_shared()
    assert record is not None
    assert answers_jobs(record)
    # a later run finds it again
    later = local_head.shared_head(timeout=START_S)
    assert (later.started, later.info["pgid"]) == (False, found[0]["pgid"])


def test_a_head_killed_between_runs_is_replaced(heads_dir: Path) -> None:
    first = local_head.shared_head(num_cpus=1, timeout=START_S)
    assert first.started
    os.killpg(int(first.info["pgid"]), signal.SIGKILL)
    second = local_head.shared_head(num_cpus=1, timeout=START_S)
    assert second.started
    assert second.info["pgid"] != first.info["pgid"]
    assert answers_jobs(second.info)
    assert [h.pgid for h in local_heads.started_heads(local_heads.SHARED_KEY)] == [
        second.info["pgid"]
    ]
    assert not os.path.exists(str(first.info["temp_dir"])), "the dead head's files were kept"


def test_deployment_stop_stops_the_shared_head_and_nothing_else(
    heads_dir: Path, tmp_path: Path
) -> None:
    """Another Ray head on the machine (recorded elsewhere) outlives the stop."""
    other_dir = tmp_path / "someone-elses-heads"
    with contextlib.ExitStack() as stack:
        os.environ["RAYORCH_LOCAL_HEADS_DIR"] = str(other_dir)
        other = local_head.start_local_head(num_cpus=1, timeout=START_S)
        stack.callback(local_head.stop_local_head, other, timeout=5)
        os.environ["RAYORCH_LOCAL_HEADS_DIR"] = str(heads_dir)
        shared = local_head.shared_head(num_cpus=1, timeout=START_S)

        home = heads_dir.parent.parent
        got = run_in_own_session(
            [sys.executable, str(ROOT / "scripts" / "deployment.py"), "stop"],
            env={**os.environ, "AIRFLOW_HOME": str(home)},
            timeout=120,
        )
        assert got.returncode == 0, got.stdout + got.stderr
        assert str(shared.info["address"]) in got.stdout, got.stdout
        assert not _group_alive(int(shared.info["pgid"])), got.stdout
        assert local_heads.read_shared() is None
        assert _group_alive(int(other["pgid"])), "the stop reached a head it did not record"
        os.environ["RAYORCH_LOCAL_HEADS_DIR"] = str(other_dir)
        assert answers_jobs(other)
        os.environ["RAYORCH_LOCAL_HEADS_DIR"] = str(heads_dir)
