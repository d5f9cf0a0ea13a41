"""A real Airflow deployment on loopback for the end-to-end tests.

``airflow scheduler`` (LocalExecutor), ``airflow dag-processor``, ``airflow triggerer``
and ``airflow api-server`` run against a throwaway ``AIRFLOW_HOME`` (SQLite), each in
its own process group, with their logs in that home. They are started and stopped by
``scripts/deployment.py``, the script docs/airflow/getting-started.md tells users to
run, so the documented way is the tested way. Their ``HOME`` is a user home in
which a plain ``ray.init()`` has already written ``~/.ray/auth_token``, as on any
machine that ever ran Ray, and no ``RAY_*`` variable is set for them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from types import ModuleType

PYTHON = sys.executable
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "deployment.py"
LOG_TAIL = 4000


def _load_script() -> ModuleType:
    """scripts/deployment.py as a module (its process-group helpers); its name differs
    from this module's."""
    spec = importlib.util.spec_from_file_location("rayorch_deployment_script", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


script = _load_script()
free_port = script.free_port
kill_group = script.kill_group


def run_script(*args: str, env: Mapping[str, str], timeout: float) -> str:
    """Run ``python scripts/deployment.py ARGS`` as the docs say; fail with its output."""
    got = subprocess.run(
        [PYTHON, str(SCRIPT), *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert got.returncode == 0, f"scripts/deployment.py {' '.join(args)}:\n{got.stdout}{got.stderr}"
    return got.stdout


def user_environment(**overrides: str) -> dict[str, str]:
    """This process's environment without any ``AIRFLOW*`` or ``RAY_*`` variable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RAY_"))}
    env.update(overrides)
    return env


def prepare_user_home(home: Path, timeout: float = 180) -> Path:
    """Run a user's first Ray script once under ``home``: ``ray.init()`` starting a local
    Ray, with no ``RAY_*`` variable set.

    Ray 2.60 then writes ``home/.ray/auth_token``. ``address="local"`` only keeps a plain
    ``ray.init()`` from joining another Ray running on a shared machine (it then starts
    nothing and writes no token). Returns the token file's path; fails if Ray wrote none.
    """
    home.mkdir(parents=True, exist_ok=True)
    code = "import ray; ray.init(address='local'); ray.shutdown()"
    out = subprocess.run(
        [PYTHON, "-c", code],
        env=user_environment(HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
        check=False,
    )
    token_file = home / ".ray" / "auth_token"
    assert out.returncode == 0, f"`{code}` failed:\n{(out.stdout + out.stderr)[-LOG_TAIL:]}"
    assert token_file.is_file(), f"ray.init() wrote no {token_file}:\n{out.stderr[-LOG_TAIL:]}"
    return token_file


@dataclass
class Group:
    """A component's process group, as scripts/deployment.py started it (not a child of
    this process): ``pid`` is its pgid."""

    pid: int

    def poll(self) -> int | None:
        return None if script.group_alive(self.pid) else -1

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while script.group_alive(self.pid):
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"process group {self.pid}", timeout)
            time.sleep(0.2)
        return -1


@dataclass
class Process:
    """One Airflow component started by scripts/deployment.py: its log and its group."""

    name: str
    airflow_home: Path
    proc: Group | None = None

    @property
    def log(self) -> Path:
        return self.airflow_home / "deployment" / "logs" / f"{self.name}.log"

    def refresh(self) -> None:
        pgid = script.read_state(self.airflow_home)["groups"].get(self.name)
        self.proc = None if pgid is None else Group(int(pgid))

    def start(self, env: Mapping[str, str]) -> None:
        """(Re)start this component alone, through the script."""
        run_script("start", "--component", self.name, env=env, timeout=60)
        self.refresh()

    def exited(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def tail(self, chars: int = LOG_TAIL) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return text[-chars:]


@dataclass
class Deployment:
    """A running Airflow deployment; ``url`` is its API server on 127.0.0.1."""

    root: Path
    airflow_home: Path
    user_home: Path
    dags_folder: Path
    landing: Path
    url: str
    env: dict[str, str]
    #: the arguments of ``scripts/deployment.py`` that started it (tests/docs compares
    #: them with the documented command)
    start_args: list[str] = field(default_factory=list)
    processes: dict[str, Process] = field(default_factory=dict)

    @property
    def ray_token_file(self) -> Path:
        return self.user_home / ".ray" / "auth_token"

    def logs(self, chars: int = LOG_TAIL) -> str:
        """The tail of every component's log, for failure messages."""
        return "\n".join(
            f"----- {p.name} ({p.log}) -----\n{p.tail(chars)}" for p in self.processes.values()
        )

    def check_alive(self) -> None:
        for p in self.processes.values():
            code = p.exited()
            if code is not None:
                raise AssertionError(f"airflow {p.name} exited with {code}:\n{p.tail()}")

    def wait(self, condition: Callable[[], Any], timeout: float, what: str) -> Any:
        """Poll ``condition`` until truthy; on timeout or a dead component, fail with logs."""
        deadline = time.monotonic() + timeout
        last: BaseException | None = None
        while True:
            self.check_alive()
            try:
                value = condition()
            except (requests.RequestException, KeyError, ValueError) as exc:
                value, last = None, exc
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout:g}s waiting for {what}"
                    + (f" (last error: {last!r})" if last else "")
                    + f"\n{self.logs()}"
                )
            time.sleep(0.5)

    def health(self) -> dict[str, Any]:
        return dict(script.health(self.url))

    def healthy(self) -> bool:
        return bool(script.healthy(self.url))

    def stop(self) -> None:
        """``scripts/deployment.py stop``: every component's group, then whatever else
        they started (task runners, loopback Ray heads in sessions of their own)."""
        run_script("stop", "--airflow-home", str(self.airflow_home), env=self.env, timeout=300)


def deployment_env(user_home: Path, landing: Path) -> dict[str, str]:
    """What the tests add to a user's environment for scripts/deployment.py (which sets
    the deployment's own settings: home, port, auth manager, executor)."""
    from e2e_helpers import E2E_DAGS, EXAMPLES, ROOT

    return user_environment(
        HOME=str(user_home),
        PYTHONPATH=os.pathsep.join([str(EXAMPLES), str(E2E_DAGS), str(ROOT)]),
        RAYORCH_LANDING=str(landing),
        # tests/e2e/dags' slow pipelines (e2e_retry must be caught mid-run)
        E2E_DELAY_S="0.2",
        AIRFLOW__CORE__PARALLELISM="6",
        AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC="2",
        AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT="300",
        AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC="2",
        # short parse and poll intervals: the tests wait on these loops, not on work
        AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL="5",
        AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL="30",
        AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES="2",
        AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME="0.5",
        AIRFLOW__OPENLINEAGE__DISABLED="true",  # no listener: sensors end in the triggerer
    )


def start_deployment(
    root: Path,
    dag_files: list[Path],
    *,
    timeout: float = 240,
    extra_env: Mapping[str, str] | None = None,
) -> Deployment:
    """Start the four components with scripts/deployment.py, as
    docs/airflow/getting-started.md says, under a user ``HOME`` where Ray wrote its
    token; the script returns once /monitor/health reports them healthy.

    ``extra_env``: variables that win over :func:`deployment_env`'s (an ``AIRFLOW__*``
    one over the script's defaults too), e.g. the OpenLineage settings."""
    import e2e_runs
    from e2e_helpers import ROOT

    sys.path.insert(0, str(ROOT / "tests" / "unit" / "reports"))
    from plugin_env import plugins_folder

    user_home = root / "user-home"
    prepare_user_home(user_home)
    dags_folder, landing = root / "dags", root / "landing"
    dags_folder.mkdir()
    landing.mkdir()
    for dag_file in dag_files:
        (dags_folder / dag_file.name).symlink_to(dag_file)
    airflow_home = root / "airflow-home"
    airflow_home.mkdir()
    plugins_folder(airflow_home)
    env = deployment_env(user_home, landing)
    env["AIRFLOW__CORE__PLUGINS_FOLDER"] = str(airflow_home / "plugins")
    # the loopback heads' logs outlive their stops: every deployment of the session
    # keeps them in one folder, which a failure report reads (e2e_runs.failure_digest)
    e2e_runs.HEAD_LOG_ARCHIVE = root.parent / "ray-head-logs"
    env["RAYORCH_HEAD_LOG_ARCHIVE"] = str(e2e_runs.HEAD_LOG_ARCHIVE)
    env.update(extra_env or {})
    port = free_port()
    deployment = Deployment(
        root=root,
        airflow_home=airflow_home,
        user_home=user_home,
        dags_folder=dags_folder,
        landing=landing,
        url=f"http://127.0.0.1:{port}",
        env=env,
        start_args=[
            "start",
            f"--airflow-home={airflow_home}",
            f"--dags-folder={dags_folder}",
            f"--port={port}",
            f"--timeout={timeout:g}",
        ],
    )
    try:
        run_script(*deployment.start_args, env=env, timeout=timeout + 360)
    finally:
        deployment.env = {**env, **script.read_env(airflow_home)}
        for name in script.COMPONENTS:
            deployment.processes[name] = Process(name, airflow_home)
            deployment.processes[name].refresh()
    return deployment


#: The OpenLineage namespace of the deployment with the listener on.
LISTENER_NAMESPACE = "rayorch-e2e"


def start_listener_deployment(root: Path, dag_files: list[Path]) -> Deployment:
    """A deployment with the OpenLineage listener on and its file transport, writing
    every event to ``<root>/openlineage-events.jsonl`` (:func:`listener_events`)."""
    transport = {"type": "file", "log_file_path": str(root / EVENTS_FILE), "append": True}
    return start_deployment(
        root,
        dag_files,
        extra_env={
            "AIRFLOW__OPENLINEAGE__DISABLED": "false",
            "AIRFLOW__OPENLINEAGE__NAMESPACE": LISTENER_NAMESPACE,
            "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport),
        },
    )


def listener_events(deployment: Deployment) -> Path:
    """The file the listener of :func:`start_listener_deployment` writes its events to."""
    return deployment.root / EVENTS_FILE


EVENTS_FILE = "openlineage-events.jsonl"
