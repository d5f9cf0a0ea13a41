#!/usr/bin/env python
"""Start and stop a real Airflow deployment on loopback: scheduler (LocalExecutor),
DAG processor, triggerer and API server, each in a process group of its own.

    python scripts/deployment.py start --dags-folder dags_examples --port 8080
    python scripts/deployment.py status
    python scripts/deployment.py stop

Everything lives under ``$AIRFLOW_HOME`` (``--airflow-home``; default
``~/rayorch-airflow``): the SQLite metadata DB, task logs, and ``deployment/`` with
``logs/<component>.log``, ``state.json`` (URL, process groups) and ``env`` (the
settings, mode 0600: ``set -a; . $AIRFLOW_HOME/deployment/env; set +a`` points the
``airflow`` CLI at it). The API server listens on 127.0.0.1 only and uses Airflow's
simple auth manager with every user an admin (``GET /auth/token`` hands out an admin
token): a deployment for one machine, never one to expose.

``stop`` sends SIGTERM to each process group ``start`` made (SIGKILL after a grace),
then to every other group whose processes carry this ``AIRFLOW_HOME`` (task runners,
loopback Ray heads in sessions of their own; read from /proc on Linux). It never
touches a process it did not start, and never runs ``ray stop``.

An ``AIRFLOW__*`` variable in the caller's environment wins over the defaults below
(the end-to-end tests, tests/e2e/deployment.py, shorten the scheduler's loops that
way); ``--airflow-home``, ``--dags-folder`` and ``--port`` win over everything.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

COMPONENTS = {
    "api-server": ["api-server", "-H", "127.0.0.1", "-p", "{port}"],
    "scheduler": ["scheduler", "--skip-serve-logs"],
    "dag-processor": ["dag-processor"],
    "triggerer": ["triggerer", "--skip-serve-logs"],
}
#: What /api/v2/monitor/health must report healthy.
HEALTH_KEYS = ("metadatabase", "scheduler", "dag_processor", "triggerer")
SIMPLE_AUTH_MANAGER = (
    "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
)
LOG_TAIL = 4000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def folder(airflow_home: Path) -> Path:
    return airflow_home / "deployment"


def airflow_executable() -> str:
    """The ``airflow`` beside this Python (the venv's), else the one on PATH."""
    beside = Path(sys.executable).with_name("airflow")
    return str(beside) if beside.exists() else "airflow"


def settings(airflow_home: Path, dags_folder: Path, port: int) -> dict[str, str]:
    """The deployment's Airflow settings, as environment variables."""
    url = f"http://127.0.0.1:{port}"
    defaults = {
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH_MANAGER,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(16),
        "AIRFLOW__API__SECRET_KEY": secrets.token_hex(16),
        "AIRFLOW__API__WORKERS": "1",
        # free ports: the defaults (8793, 8794) are taken on a machine shared with others
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
        "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
    }
    given = {k: v for k, v in os.environ.items() if k.startswith("AIRFLOW__")}
    return {
        **defaults,
        **given,
        "AIRFLOW_HOME": str(airflow_home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__BASE_URL": url,
    }


def write_env(airflow_home: Path, values: dict[str, str]) -> None:
    path = folder(airflow_home) / "env"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.writelines(f"{k}={shlex.quote(v)}\n" for k, v in sorted(values.items()))


def read_env(airflow_home: Path) -> dict[str, str]:
    values = {}
    for line in (folder(airflow_home) / "env").read_text().splitlines():
        key, _, value = line.partition("=")
        values[key] = shlex.split(value)[0] if value else ""
    return values


def read_state(airflow_home: Path) -> dict:
    path = folder(airflow_home) / "state.json"
    return json.loads(path.read_text()) if path.exists() else {"groups": {}}


def write_state(airflow_home: Path, state: dict) -> None:
    path = folder(airflow_home) / "state.json"
    path.write_text(json.dumps(state, indent=1))


# -- process groups ----------------------------------------------------------------------


def _running(pid: int) -> bool:
    """Alive and not a zombie (a container's init may never reap one)."""
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


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return any(group == pgid and _running(pid) for pid, group in _processes())


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
            if not group_alive(pgid):
                return
            time.sleep(0.2)


def groups_started_under(airflow_home: Path) -> set[int]:
    """Groups of live processes whose environment has this ``AIRFLOW_HOME``."""
    marker = f"AIRFLOW_HOME={airflow_home}".encode()
    own = {os.getpgrp(), os.getpgid(os.getppid())}
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


# -- commands ----------------------------------------------------------------------------


def start_component(airflow_home: Path, name: str, env: dict[str, str]) -> int:
    """Start one component in a new session (its own process group); returns the pgid."""
    port = env["AIRFLOW__API__PORT"]
    cmd = [airflow_executable(), *(a.format(port=port) for a in COMPONENTS[name])]
    log = folder(airflow_home) / "logs" / f"{name}.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    state = read_state(airflow_home)
    state["groups"][name] = proc.pid
    write_state(airflow_home, state)
    return proc.pid


def health(url: str) -> dict:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=5) as got:
            return dict(json.load(got))
    except (OSError, ValueError, urllib.error.URLError):
        return {}


def healthy(url: str) -> bool:
    found = health(url)
    return all((found.get(k) or {}).get("status") == "healthy" for k in HEALTH_KEYS)


def tails(airflow_home: Path) -> str:
    logs = sorted((folder(airflow_home) / "logs").glob("*.log"))
    return "\n".join(f"----- {p} -----\n{p.read_text(errors='replace')[-LOG_TAIL:]}" for p in logs)


def start(args: argparse.Namespace) -> int:
    home: Path = args.airflow_home
    running = {n for n, g in read_state(home)["groups"].items() if group_alive(g)}
    if args.component:
        env = {**os.environ, **read_env(home)}
        for name in args.component:
            if name not in running:
                print(f"{name}: started, process group {start_component(home, name, env)}")
        return 0
    if running:
        print(f"already running under {home}: {sorted(running)}; stop it first", file=sys.stderr)
        return 1
    (folder(home) / "logs").mkdir(parents=True, exist_ok=True)
    values = settings(home, args.dags_folder.resolve(), args.port)
    write_env(home, values)
    write_state(home, {"url": values["AIRFLOW__API__BASE_URL"], "groups": {}})
    env = {**os.environ, **values}
    migrate = subprocess.run(
        [airflow_executable(), "db", "migrate"], env=env, capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip
    (folder(home) / "logs" / "db-migrate.log").write_text(migrate.stdout + migrate.stderr)
    if migrate.returncode != 0:
        print(f"`airflow db migrate` failed:\n{tails(home)}", file=sys.stderr)
        return 1
    for name in COMPONENTS:
        start_component(home, name, env)
    url = values["AIRFLOW__API__BASE_URL"]
    deadline = time.monotonic() + args.timeout
    while not healthy(url):
        dead = [n for n, g in read_state(home)["groups"].items() if not group_alive(g)]
        if dead or time.monotonic() > deadline:
            why = f"{dead} exited" if dead else f"not healthy within {args.timeout:g}s"
            print(f"the deployment failed to start ({why}):\n{tails(home)}", file=sys.stderr)
            stop(args)
            return 1
        time.sleep(1.0)
    print(f"Airflow is up at {url} (logs in {folder(home) / 'logs'})")
    return 0


def stop(args: argparse.Namespace) -> int:
    home: Path = args.airflow_home
    state = read_state(home)
    names = args.component or list(state["groups"])
    for name in names:
        pgid = state["groups"].get(name)
        if pgid is not None:
            kill_group(int(pgid))
            print(f"{name}: stopped (process group {pgid})")
    if not args.component:
        for pgid in groups_started_under(home):
            kill_group(pgid, grace=10.0)
            print(f"stopped process group {pgid}, started under {home}")
    return 0


def status(args: argparse.Namespace) -> int:
    state = read_state(args.airflow_home)
    groups = {n: {"pgid": g, "alive": group_alive(g)} for n, g in state["groups"].items()}
    url = state.get("url")
    print(json.dumps({"url": url, "groups": groups, "health": health(url) if url else {}}))
    return 0 if groups and all(g["alive"] for g in groups.values()) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["start", "stop", "status"])
    default_home = os.environ.get("AIRFLOW_HOME") or str(Path.home() / "rayorch-airflow")
    parser.add_argument("--airflow-home", type=Path, default=Path(default_home))
    parser.add_argument("--dags-folder", type=Path, default=Path("dags_examples"))
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to get healthy")
    parser.add_argument(
        "--component", action="append", choices=list(COMPONENTS),
        help="start or stop only this component (after `start`), repeatable",
    )  # fmt: skip
    args = parser.parse_args(argv)
    args.airflow_home = args.airflow_home.expanduser().resolve()
    return {"start": start, "stop": stop, "status": status}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
