"""A real Airflow deployment on loopback for the end-to-end tests.

``airflow scheduler`` (LocalExecutor), ``airflow dag-processor``, ``airflow triggerer``
and ``airflow api-server`` run against a throwaway ``AIRFLOW_HOME`` (SQLite), each in
its own process group, with their logs in that home. Their ``HOME`` is a user home in
which a plain ``ray.init()`` has already written ``~/.ray/auth_token``, as on any
machine that ever ran Ray, and no ``RAY_*`` variable is set for them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

PYTHON = sys.executable
AIRFLOW = str(Path(PYTHON).with_name("airflow"))
SIMPLE_AUTH_MANAGER = (
    "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
)
COMPONENTS = ("scheduler", "dag_processor", "triggerer")
LOG_TAIL = 4000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
class Process:
    """One Airflow component: its command, its log file and its process group."""

    name: str
    cmd: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self, env: Mapping[str, str]) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                self.cmd,
                env=dict(env),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def exited(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def tail(self, chars: int = LOG_TAIL) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return text[-chars:]

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace`` seconds."""
        if self.proc is None:
            return
        kill_group(self.proc.pid, grace)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return any(pid for pid, group in _processes() if group == pgid and _running(pid))


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _processes() -> list[tuple[int, int]]:
    """(pid, pgid) of every process on the machine."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                found.append((int(entry), os.getpgid(int(entry))))
    return found


def kill_group(pgid: int, grace: float = 20.0) -> None:
    """Stop one process group we started: SIGTERM, then SIGKILL after ``grace``."""
    if pgid <= 1 or pgid == os.getpgrp():
        raise ValueError(f"refusing to signal process group {pgid}")
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(-pgid, os.WNOHANG)
            if not _group_alive(pgid):
                return
            time.sleep(0.2)


def groups_started_under(airflow_home: Path) -> set[int]:
    """Process groups of live processes whose environment has this ``AIRFLOW_HOME``:
    everything the deployment started, Ray heads in sessions of their own included."""
    marker = f"AIRFLOW_HOME={airflow_home}".encode()
    own = {os.getpgrp(), os.getpid()}
    groups = set()
    for pid, pgid in _processes():
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                environ = fh.read().split(b"\0")
        except OSError:
            continue
        if marker in environ and pgid not in own and _running(pid):
            groups.add(pgid)
    return groups


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
        got = requests.get(f"{self.url}/api/v2/monitor/health", timeout=5)
        return dict(got.json()) if got.ok else {}

    def healthy(self) -> bool:
        health = self.health()
        return bool(health) and all(
            (health.get(c) or {}).get("status") == "healthy" for c in ("metadatabase", *COMPONENTS)
        )

    def stop(self) -> None:
        """Stop every component's group, then whatever else they started (task runners,
        loopback Ray heads in sessions of their own)."""
        for name in ("scheduler", "triggerer", "dag-processor", "api-server"):
            if name in self.processes:
                self.processes[name].stop()
        for pgid in groups_started_under(self.airflow_home):
            kill_group(pgid, grace=10.0)


def deployment_env(
    root: Path, user_home: Path, dags_folder: Path, landing: Path, port: int
) -> dict[str, str]:
    """The environment of every component: a user's, plus the deployment's settings."""
    from e2e_helpers import E2E_DAGS, EXAMPLES, ROOT

    airflow_home = root / "airflow-home"
    return user_environment(
        HOME=str(user_home),
        AIRFLOW_HOME=str(airflow_home),
        PYTHONPATH=os.pathsep.join([str(EXAMPLES), str(E2E_DAGS), str(ROOT)]),
        RAYORCH_LANDING=str(landing),
        # tests/e2e/dags' slow pipelines (e2e_retry must be caught mid-run)
        E2E_DELAY_S="0.2",
        AIRFLOW__CORE__DAGS_FOLDER=str(dags_folder),
        AIRFLOW__CORE__PLUGINS_FOLDER=str(airflow_home / "plugins"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__UNIT_TEST_MODE="False",
        AIRFLOW__CORE__EXECUTOR="LocalExecutor",
        AIRFLOW__CORE__PARALLELISM="6",
        AIRFLOW__CORE__EXECUTION_API_SERVER_URL=f"http://127.0.0.1:{port}/execution/",
        AIRFLOW__CORE__AUTH_MANAGER=SIMPLE_AUTH_MANAGER,
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS="True",
        AIRFLOW__API_AUTH__JWT_SECRET=secrets.token_hex(16),
        AIRFLOW__API__SECRET_KEY=secrets.token_hex(16),
        AIRFLOW__API__HOST="127.0.0.1",
        AIRFLOW__API__PORT=str(port),
        AIRFLOW__API__BASE_URL=f"http://127.0.0.1:{port}",
        AIRFLOW__API__WORKERS="1",
        AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT=str(free_port()),
        AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT=str(free_port()),
        AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC="2",
        AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT="300",
        AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC="2",
        # short parse and poll intervals: the tests wait on these loops, not on work
        AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL="5",
        AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL="30",
        AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES="2",
        AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME="0.5",
    )


def start_deployment(root: Path, dag_files: list[Path], *, timeout: float = 240) -> Deployment:
    """Migrate a fresh SQLite DB and start the four components; return once the API
    server answers and it reports scheduler, DAG processor and triggerer healthy."""
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
    port = free_port()
    env = deployment_env(root, user_home, dags_folder, landing, port)
    airflow_home = Path(env["AIRFLOW_HOME"])
    airflow_home.mkdir()
    plugins_folder(airflow_home)
    logs = airflow_home / "component-logs"
    logs.mkdir()
    migrate = subprocess.run(
        [AIRFLOW, "db", "migrate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    (logs / "db-migrate.log").write_text(migrate.stdout + migrate.stderr)
    assert migrate.returncode == 0, (migrate.stdout + migrate.stderr)[-LOG_TAIL:]
    deployment = Deployment(
        root=root,
        airflow_home=airflow_home,
        user_home=user_home,
        dags_folder=dags_folder,
        landing=landing,
        url=f"http://127.0.0.1:{port}",
        env=env,
    )
    commands = {
        "api-server": ["api-server", "-H", "127.0.0.1", "-p", str(port)],
        "scheduler": ["scheduler", "--skip-serve-logs"],
        "dag-processor": ["dag-processor"],
        "triggerer": ["triggerer", "--skip-serve-logs"],
    }
    try:
        for name, args in commands.items():
            process = Process(name, [AIRFLOW, *args], logs / f"{name}.log")
            deployment.processes[name] = process
            process.start(env)
        deployment.wait(deployment.healthy, timeout, "a healthy deployment (/monitor/health)")
    except BaseException:
        deployment.stop()
        raise
    return deployment
