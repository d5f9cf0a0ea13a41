"""getting-started.md's ``deployment-start`` and ``deployment-stop`` blocks, run as
written on a deployment of this test's own.

A user pastes both into one shell, from the checkout, with the venv's ``python`` first
on ``PATH``: the start block exports ``AIRFLOW_HOME`` (under ``$HOME``, here a home of
the test's own) and the stop block finds the deployment through that variable alone.
The only substitution is the page's port (``--port 8080``) by a free one, so the
session's e2e deployment and anything else on the machine keep theirs.

Checked: start prints the address the page promises and the four components answer
healthy on ``/api/v2/monitor/health``; stop leaves none of the process groups start
recorded (nor the groups their processes started) alive, and the API server no longer
answers. Whatever outlives a failed stop is stopped by its recorded process group.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs"))

from deployment import free_port, script, user_environment
from doc_blocks import ROOT, commands, one_block, run_block

pytestmark = [pytest.mark.slow]

DOC_PORT = "--port 8080"


def _exports(text: str) -> str:
    """The block's ``export`` lines: what stays set in the user's shell after it."""
    return "".join(line + "\n" for line in text.splitlines() if line.startswith("export "))


def _recorded_groups(airflow_home: Path) -> dict[int, int | None]:
    """Every process group the deployment's state records, and the groups their
    processes started (task runners), with their leaders' start times."""
    state = script.read_state(airflow_home)
    groups: dict[int, int | None] = {}
    for name, pgid in state["groups"].items():
        groups[int(pgid)] = (state.get("started", {}).get(name) or {}).get("start")
        groups.update(script.descendant_groups(int(pgid)))
    return groups


def _alive(groups: dict[int, int | None]) -> list[int]:
    """The groups still alive as the ones recorded (not a reused group number)."""
    return sorted(p for p, start in groups.items() if script.is_recorded_group(p, start))


def _stop_what_is_left(groups: dict[int, int | None]) -> None:
    for pgid in _alive(groups):
        script.kill_group(pgid)


@pytest.fixture
def user_shell(tmp_path: Path) -> dict[str, str]:
    """A user's environment: a ``HOME`` of the test's own, no Airflow or Ray variable,
    a landing folder of its own (read by the components)."""
    home = tmp_path / "home"
    home.mkdir()
    landing = tmp_path / "landing"
    landing.mkdir()
    env = user_environment(HOME=str(home), RAYORCH_LANDING=str(landing))
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    return env


@pytest.mark.timeout(900)
def test_getting_started_starts_and_stops_a_deployment_as_written(
    user_shell: dict[str, str],
) -> None:
    start_block, stop_block = one_block("deployment-start"), one_block("deployment-stop")
    assert DOC_PORT in start_block.text, f"{start_block.id} no longer says `{DOC_PORT}`"
    assert not any("--airflow-home" in argv for argv in commands(start_block)), (
        f"{start_block.id}: the page's home comes from AIRFLOW_HOME"
    )
    port = free_port()
    start_text = start_block.text.replace(DOC_PORT, f"--port {port}")
    airflow_home = Path(user_shell["HOME"]) / "rayorch-airflow"  # the page's $HOME/...
    groups: dict[int, int | None] = {}
    try:
        started = run_block(start_block, start_text, env=user_shell, cwd=ROOT, timeout=600)
        url = f"http://127.0.0.1:{port}"
        assert f"Airflow is up at {url}" in started.stdout, started.stdout[-2000:]
        assert (airflow_home / "deployment" / "state.json").is_file(), (
            f"start did not use AIRFLOW_HOME={airflow_home}"
        )
        health = script.health(url)
        assert {k: health[k]["status"] for k in script.HEALTH_KEYS} == dict.fromkeys(
            script.HEALTH_KEYS, "healthy"
        ), health
        groups = _recorded_groups(airflow_home)
        assert len(script.read_state(airflow_home)["groups"]) == len(script.COMPONENTS)
        assert _alive(groups) == sorted(groups), groups

        # the same shell: the start block's exports are still set
        stop_text = _exports(start_block.text) + stop_block.text
        run_block(stop_block, stop_text, env=user_shell, cwd=ROOT, timeout=300)
        assert _alive(groups) == [], f"process groups left alive after stop: {_alive(groups)}"
        assert script.health(url) == {}, "the API server still answers after stop"
    finally:
        groups.update(_recorded_groups(airflow_home) if airflow_home.exists() else {})
        with contextlib.suppress(OSError, ValueError):
            _stop_what_is_left(groups)
