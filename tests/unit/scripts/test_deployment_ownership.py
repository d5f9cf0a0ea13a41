"""scripts/deployment.py run as a user runs it: it stops exactly what it started, and
its refusals say what to do.

The script runs under a Python of its own (a link to this interpreter in a folder with
no ``airflow`` beside it) so these tests choose what ``airflow`` is: a stand-in that
sleeps (and starts a child in a process group of its own, as Airflow's task runners
do), or none at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import run_in_own_session

pytestmark = pytest.mark.timeout(120)

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "deployment.py"
SYSTEM_PATH = "/usr/bin:/bin"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def bindir(tmp_path: Path) -> Path:
    """A folder with ``python`` (this interpreter, without its venv) and nothing else."""
    path = tmp_path / "bin"
    path.mkdir()
    (path / "python").symlink_to(os.path.realpath(sys.executable))
    return path


@pytest.fixture
def fake_airflow(bindir: Path, tmp_path: Path) -> Path:
    """``airflow`` beside that Python: starts a child in a session of its own (its pid
    written to ``<tmp>/children``), then sleeps."""
    children = tmp_path / "children"
    script = bindir / "airflow"
    script.write_text(
        "#!/bin/sh\n"
        f'setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! >> "{children}"\n'
        "exec sleep 300\n"
    )
    script.chmod(0o755)
    return children


@pytest.fixture
def home(tmp_path: Path, request) -> Path:
    """An AIRFLOW_HOME; every process a test started is killed at the end."""
    path = tmp_path / "af"
    path.mkdir()
    started: list[int] = []
    request.node.started = started
    yield path
    for pid in started:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def _env(bindir: Path, home: Path) -> dict[str, str]:
    """The deployment script's environment: ``bindir``'s tools first, ``home`` its home."""
    return {"PATH": f"{bindir}:{SYSTEM_PATH}", "AIRFLOW_HOME": str(home), "HOME": str(home)}


def _run(bindir: Path, home: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(bindir / "python"), str(SCRIPT), *args],
        env=_env(bindir, home),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _bystander(home: Path, request) -> subprocess.Popen:
    """``AIRFLOW_HOME=<home> setsid sleep 300``: a process of the user's, not the script's."""
    env = {"PATH": SYSTEM_PATH, "AIRFLOW_HOME": str(home)}
    proc = subprocess.Popen(["sleep", "300"], env=env, start_new_session=True)
    request.node.started.append(proc.pid)
    return proc


def _write_settings(home: Path) -> None:
    """What ``start`` writes before it starts the components (settings, no groups)."""
    (home / "deployment" / "logs").mkdir(parents=True)
    (home / "deployment" / "env").write_text(
        f"AIRFLOW_HOME={home}\nAIRFLOW__API__PORT=1\nAIRFLOW__API__BASE_URL=http://127.0.0.1:1\n"
    )


def test_stop_leaves_a_process_that_only_shares_the_airflow_home(
    bindir: Path, home: Path, request
) -> None:
    sleeper = _bystander(home, request)
    got = _run(bindir, home, "stop")
    assert got.returncode == 0, got.stdout + got.stderr
    assert _alive(sleeper.pid), f"stop killed a process it did not start:\n{got.stdout}"
    assert sleeper.poll() is None


def test_stop_stops_the_components_it_started_and_the_groups_they_started(
    bindir: Path, fake_airflow: Path, home: Path, request
) -> None:
    _write_settings(home)
    sleeper = _bystander(home, request)
    got = _run(bindir, home, "start", "--component", "scheduler")
    assert got.returncode == 0, got.stdout + got.stderr
    state = (home / "deployment" / "state.json").read_text()
    scheduler = int(json.loads(state)["groups"]["scheduler"])
    request.node.started.append(scheduler)
    # the stand-in wrote its child's pid before it became `sleep`
    for _ in range(200):
        if fake_airflow.exists() and fake_airflow.read_text().strip():
            break
        subprocess.run(["sleep", "0.05"], check=True)
    child = int(fake_airflow.read_text().split()[0])
    request.node.started.append(child)
    assert _alive(scheduler)
    assert _alive(child)

    got = _run(bindir, home, "stop")
    assert got.returncode == 0, got.stdout + got.stderr
    assert not _alive(scheduler), got.stdout
    assert not _alive(child), f"a group the scheduler started is left:\n{got.stdout}"
    assert _alive(sleeper.pid), f"stop killed a process it did not start:\n{got.stdout}"


def test_stop_under_timeout_leaves_its_caller_alone(bindir: Path, home: Path) -> None:
    """A shell with AIRFLOW_HOME exported runs ``timeout ... deployment.py stop``."""
    shell = f'timeout 60 "{bindir}/python" "{SCRIPT}" stop; echo "caller alive, stop exited $?"'
    got = run_in_own_session(["bash", "-c", shell], env=_env(bindir, home), timeout=90)
    assert "caller alive, stop exited 0" in got.stdout, (got.returncode, got.stdout, got.stderr)


def test_start_without_airflow_names_the_fix(bindir: Path, home: Path, tmp_path: Path) -> None:
    dags = tmp_path / "dags"
    dags.mkdir()
    got = _run(bindir, home, "start", "--dags-folder", str(dags), "--port", "1")
    assert got.returncode != 0
    assert "Traceback" not in got.stderr, got.stderr
    assert "`airflow`" in got.stderr
    assert "pip install" in got.stderr, got.stderr  # the fix


def test_restarting_a_component_before_start_names_the_fix(
    bindir: Path, fake_airflow: Path, home: Path
) -> None:
    got = _run(bindir, home, "start", "--component", "scheduler")
    assert got.returncode != 0
    assert "Traceback" not in got.stderr, got.stderr
    assert "deployment.py start --dags-folder" in got.stderr, got.stderr


def test_stop_stops_the_ray_heads_its_tasks_recorded_and_only_while_they_are_those(
    bindir: Path, home: Path, request, monkeypatch
) -> None:
    """A head a task of the deployment started records itself in the deployment's
    RAYORCH_LOCAL_HEADS_DIR; a record whose group is no longer that head (its number
    reused) is dropped without a signal."""
    from airflow_provider_rayorch.common import local_heads

    monkeypatch.setenv("RAYORCH_LOCAL_HEADS_DIR", str(home / "deployment" / "ray-heads"))
    head = _bystander(home, request)  # stands in for `ray start --head --block`
    reused = _bystander(home, request)
    local_heads.note_started(head.pid, temp_dir=str(home / "rayh-a"), address="http://127.0.0.1:1")
    local_heads.note_started(
        reused.pid, temp_dir=str(home / "rayh-b"), address="http://127.0.0.1:2"
    )
    record = home / "deployment" / "ray-heads" / "started" / f"{reused.pid}.json"
    data = json.loads(record.read_text())
    record.write_text(json.dumps({**data, "start": data["start"] - 1}))  # an older process

    got = _run(bindir, home, "stop")
    assert got.returncode == 0, got.stdout + got.stderr
    assert head.wait(10) is not None, got.stdout
    assert _alive(reused.pid), (
        f"stop signalled a group that is not the recorded head:\n{got.stdout}"
    )
    assert local_heads.started_heads() == []
