"""scripts/deployment.py's rules that need no running Airflow: which setting wins, the
settings file a shell can load, and that it never signals a group it must not.
(Starting and stopping a real deployment with it is what every e2e test does.)"""

from __future__ import annotations

import os
import stat
import subprocess
from typing import TYPE_CHECKING

import pytest

from .load_script import load_script

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def script():
    return load_script("deployment.py", "rayorch_deployment_script")


def test_a_callers_airflow_variable_wins_over_a_default_but_not_over_an_option(
    script, monkeypatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AIRFLOW__CORE__PARALLELISM", "6")
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "SequentialExecutor")
    monkeypatch.setenv("AIRFLOW__API__PORT", "9999")
    got = script.settings(tmp_path / "home", tmp_path / "dags", 8123)
    assert got["AIRFLOW__CORE__PARALLELISM"] == "6"
    assert got["AIRFLOW__CORE__EXECUTOR"] == "SequentialExecutor"
    assert got["AIRFLOW__API__PORT"] == "8123"
    assert got["AIRFLOW__API__HOST"] == "127.0.0.1"
    assert got["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:8123/execution/"
    assert got["AIRFLOW__CORE__DAGS_FOLDER"] == str(tmp_path / "dags")


def test_the_settings_file_is_private_and_loads_in_a_shell(script, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "deployment").mkdir(parents=True)
    values = {"AIRFLOW_HOME": str(home), "AIRFLOW__X__Y": "a b'c\"$d"}
    script.write_env(home, values)
    path = home / "deployment" / "env"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert script.read_env(home) == values
    shell = subprocess.run(
        ["bash", "-c", f'set -a; . "{path}"; set +a; printf %s "$AIRFLOW__X__Y"'],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.environ["PATH"]},
    )
    assert shell.stdout == values["AIRFLOW__X__Y"]


def test_it_refuses_to_signal_its_own_group_or_init(script) -> None:
    for pgid in (0, 1, os.getpgrp()):
        with pytest.raises(ValueError, match="refusing"):
            script.kill_group(pgid)


def test_stop_stops_a_group_it_started_and_forgets_nothing_alive(script, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "deployment").mkdir(parents=True)
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    script.write_state(home, {"url": "http://127.0.0.1:1", "groups": {"scheduler": sleeper.pid}})
    assert script.group_alive(sleeper.pid)
    args = script.argparse.Namespace(airflow_home=home, component=None)
    assert script.stop(args) == 0
    assert sleeper.wait(10) is not None
    assert not script.group_alive(sleeper.pid)


def test_stop_signals_every_group_before_it_waits_on_any(script, monkeypatch) -> None:
    """Groups that outlive SIGTERM are stopped together: one grace period for all."""
    stubborn = [
        subprocess.Popen(
            ["bash", "-c", "trap '' TERM; sleep 300 & echo ready; wait"],
            start_new_session=True,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for proc in stubborn:  # SIGTERM is ignored from here on
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"
    sent: list[tuple[int, int]] = []
    killpg = script.os.killpg

    def record(pgid: int, sig: int) -> None:
        if sig:
            sent.append((pgid, sig))
        killpg(pgid, sig)

    monkeypatch.setattr(script.os, "killpg", record)
    a, b = (p.pid for p in stubborn)
    script.kill_groups([a, b], grace=0.5)
    term, kill = script.signal.SIGTERM, script.signal.SIGKILL
    assert sent == [(a, term), (b, term), (a, kill), (b, kill)]
    for proc in stubborn:
        assert proc.wait(10) is not None
        assert not script.group_alive(proc.pid)
        proc.stdout.close()
