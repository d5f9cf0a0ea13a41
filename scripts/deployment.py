#!/usr/bin/env python
"""Start and stop a real Airflow deployment on loopback: scheduler (LocalExecutor),
DAG processor, triggerer and API server, each in a process group of its own.

    python scripts/deployment.py start --dags-folder dags_examples --port 8080
    python scripts/deployment.py status
    python scripts/deployment.py start --component scheduler   # (re)start one component
    python scripts/deployment.py stop [--component scheduler]

Everything lives under ``$AIRFLOW_HOME`` (``--airflow-home``; default
``~/rayorch-airflow``): the SQLite metadata DB, task logs, and ``deployment/`` with
``logs/<component>.log``, ``state.json`` (URL; each component's process group, start
time and command), ``env`` (the settings, mode 0600: ``set -a; . $AIRFLOW_HOME/deployment/env;
set +a`` points the ``airflow`` CLI at it) and ``ray-heads/`` (the components'
``RAYORCH_LOCAL_HEADS_DIR``: the loopback Ray heads their tasks started record
themselves there). The API server listens on 127.0.0.1 only and uses Airflow's simple
auth manager with every user an admin (``GET /auth/token`` hands out an admin token):
a deployment for one machine, never one to expose.

``stop`` stops (SIGTERM, SIGKILL after a grace) the process groups ``start`` recorded,
each only while it is still the one recorded (its leader's start time), the groups
their processes started in turn (Airflow's task runners), found from the live process
tree before the component stops, and the loopback Ray heads recorded in ``ray-heads/``.
It never matches processes by their environment, so a shell or a Ray node that merely
has the same ``AIRFLOW_HOME`` is left alone, and it never runs ``ray stop``.

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
import shutil
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


def heads_dir(airflow_home: Path) -> Path:
    """Where the deployment's tasks record the loopback Ray heads they start
    (``RAYORCH_LOCAL_HEADS_DIR`` of every component)."""
    return folder(airflow_home) / "ray-heads"


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
        "RAYORCH_LOCAL_HEADS_DIR": str(heads_dir(airflow_home)),
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


def _stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, ppid, pgid, start time in clock ticks since boot) from /proc/<pid>/stat."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1]), int(fields[2]), int(fields[19])


def _table() -> dict[int, tuple[int, int, int]]:
    """{pid: (ppid, pgid, start)} of every running (not zombie) process on the machine."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (got := _stat(int(entry))) and got[0] != "Z":
            found[int(entry)] = got[1:]
    return found


def process_start(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot): with the pid, names one process."""
    got = _stat(pid)
    return None if got is None or got[0] == "Z" else got[3]


def _own_groups() -> set[int]:
    return {os.getpgrp(), os.getpgid(os.getppid())}


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return any(group == pgid for _, group, _ in _table().values())


def is_recorded_group(pgid: int, start: int | None) -> bool:
    """The live group ``pgid`` is the one recorded with its leader's ``start``.

    The leader alive with that start time, or (the leader gone) members that started
    no earlier: a group number is not reused while the group has members, and a newer
    group under a reused number has a leader started later. ``start`` None (a record
    without it) trusts the number."""
    if pgid <= 1 or pgid in _own_groups():
        return False
    members = [s for _, group, s in _table().values() if group == pgid]
    if not members:
        return False
    if start is None:
        return True
    leader = process_start(pgid)
    if leader is not None:
        return leader == start
    return min(members) >= start


def descendant_groups(pgid: int) -> dict[int, int]:
    """{pgid: start} of the other process groups that processes of group ``pgid``
    started (their children, grandchildren...), like Airflow's task runners."""
    table = _table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    todo = [pid for pid, (_, group, _) in table.items() if group == pgid]
    skip = {pgid, *_own_groups()}
    found: dict[int, int] = {}
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            group = table[child][1]
            if group not in skip:
                leader = table.get(group)
                start = leader[2] if leader else table[child][2]
                found[group] = min(found.get(group, start), start)
    return found


def kill_group(pgid: int, grace: float = 20.0) -> None:
    """Stop one process group we started: SIGTERM, then SIGKILL after ``grace``."""
    kill_groups([pgid], grace)


def kill_groups(pgids: list[int], grace: float = 20.0) -> None:
    """Stop process groups we started, all at once: SIGTERM to each, then SIGKILL to
    those still alive after ``grace`` (the wait is the slowest group's, not the sum)."""
    refused = [g for g in pgids if g <= 1 or g in _own_groups()]
    if refused:
        raise ValueError(f"refusing to signal process group {refused[0]}")
    left = list(pgids)
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        for pgid in left:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, sig)
        deadline = time.monotonic() + wait
        while left and time.monotonic() < deadline:
            for pgid in left:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(-pgid, os.WNOHANG)
            left = [pgid for pgid in left if group_alive(pgid)]
            if left:
                time.sleep(0.2)
        if not left:
            return


def recorded_heads(airflow_home: Path) -> list[tuple[Path, dict]]:
    """The loopback Ray heads the deployment's tasks started, as they recorded them
    (``<heads dir>/started/<pgid>.json``, see airflow_provider_rayorch.common.local_heads)."""
    found = []
    for path in sorted((heads_dir(airflow_home) / "started").glob("*.json")):
        with contextlib.suppress(OSError, ValueError):
            found.append((path, json.loads(path.read_text())))
    return found


def stop_heads(heads: list[tuple[Path, dict]]) -> list[dict]:
    """Stop the recorded heads still the ones recorded, all at once, and drop every
    record (and the head's temp dir); returns the records of the heads stopped."""
    live = [
        (path, head)
        for path, head in heads
        if is_recorded_group(int(head.get("pgid", 0)), _start(head))
    ]
    kill_groups([int(head["pgid"]) for _, head in live], grace=10.0)
    for _, head in heads:
        temp_dir = str(head.get("temp_dir") or "")
        if os.path.basename(temp_dir).startswith("rayh"):
            shutil.rmtree(temp_dir, ignore_errors=True)
    for path, _ in heads:
        path.unlink(missing_ok=True)
    return [head for _, head in live]


def _start(record: dict) -> int | None:
    start = record.get("start")
    return None if start is None else int(start)


# -- commands ----------------------------------------------------------------------------


def start_component(airflow_home: Path, name: str, env: dict[str, str]) -> int:
    """Start one component in a new session (its own process group); record it (its
    pgid, start time and command) in ``state.json``; returns the pgid."""
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
    record = {"pgid": proc.pid, "start": process_start(proc.pid), "command": cmd}
    state.setdefault("started", {})[name] = record
    write_state(airflow_home, state)
    return proc.pid


def running_components(airflow_home: Path) -> set[str]:
    """The recorded components whose process group is still the one ``start`` made."""
    state = read_state(airflow_home)
    started = state.get("started", {})
    return {
        name
        for name, pgid in state["groups"].items()
        if is_recorded_group(int(pgid), (started.get(name) or {}).get("start"))
    }


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


def fail(message: str) -> int:
    print(message, file=sys.stderr)
    return 2


def missing_airflow() -> str | None:
    """Why the components cannot start, if ``airflow`` is nowhere to be found."""
    if Path(sys.executable).with_name("airflow").exists() or shutil.which("airflow"):
        return None
    return (
        f"no `airflow` command beside {sys.executable} nor on PATH, so the deployment "
        "cannot start. Fix: run this script with the Python that has the provider "
        "installed (`.venv/bin/python scripts/deployment.py start ...`), or install it "
        "into this Python from the checkout: `pip install -e .`"
    )


def start(args: argparse.Namespace) -> int:
    home: Path = args.airflow_home
    if why := missing_airflow():
        return fail(why)
    running = running_components(home)
    if args.component:
        if not (folder(home) / "env").exists():
            return fail(
                f"no deployment under {home} to restart a component of (no "
                f"{folder(home) / 'env'}). Fix: start it first: `python scripts/deployment.py "
                "start --dags-folder DAGS --port PORT` (with this AIRFLOW_HOME)"
            )
        env = {**os.environ, **read_env(home)}
        for name in args.component:
            if name in running:
                print(f"{name}: already running")
            else:
                print(f"{name}: started, process group {start_component(home, name, env)}")
        return 0
    if running:
        return fail(
            f"already running under {home}: {sorted(running)}. Fix: stop it first "
            "(`python scripts/deployment.py stop`), or restart one component with "
            "`python scripts/deployment.py start --component NAME`"
        )
    (folder(home) / "logs").mkdir(parents=True, exist_ok=True)
    values = settings(home, args.dags_folder.resolve(), args.port)
    write_env(home, values)
    write_state(home, {"url": values["AIRFLOW__API__BASE_URL"], "groups": {}, "started": {}})
    env = {**os.environ, **values}
    migrate = subprocess.run(
        [airflow_executable(), "db", "migrate"], env=env, capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip
    (folder(home) / "logs" / "db-migrate.log").write_text(migrate.stdout + migrate.stderr)
    if migrate.returncode != 0:
        return fail(
            f"`airflow db migrate` failed:\n{tails(home)}\nFix: the error above; a metadata "
            f"DB another Airflow version made under {home} needs a fresh --airflow-home"
        )
    for name in COMPONENTS:
        start_component(home, name, env)
    url = values["AIRFLOW__API__BASE_URL"]
    deadline = time.monotonic() + args.timeout
    while not healthy(url):
        dead = sorted(set(read_state(home)["groups"]) - running_components(home))
        if dead or time.monotonic() > deadline:
            why = f"{dead} exited" if dead else f"not healthy within {args.timeout:g}s"
            fix = "read its log above" if dead else "give it more time (--timeout)"
            print(f"the deployment failed to start ({why}):\n{tails(home)}", file=sys.stderr)
            print(f"Fix: {fix}", file=sys.stderr)
            stop(args)
            return 1
        time.sleep(1.0)
    print(f"Airflow is up at {url} (logs in {folder(home) / 'logs'})")
    return 0


def stop(args: argparse.Namespace) -> int:
    """Stop the components ``start`` recorded, the process groups they started, and
    (all components) the loopback Ray heads the deployment's tasks recorded."""
    home: Path = args.airflow_home
    state = read_state(home)
    started = state.get("started", {})
    names = args.component or list(state["groups"])
    groups: dict[int, str] = {}  # every group to stop, with what it is, stopped together
    for name in names:
        pgid = state["groups"].pop(name, None)
        record = started.pop(name, None) or {}
        if pgid is None:
            print(f"{name}: not started by this script under {home}")
            continue
        if not is_recorded_group(int(pgid), record.get("start")):
            print(f"{name}: already stopped (process group {pgid})")
            continue
        groups[int(pgid)] = f"{name}: stopped (process group {pgid})"
        for child, child_start in descendant_groups(int(pgid)).items():
            if is_recorded_group(child, child_start):
                groups.setdefault(child, f"stopped process group {child}, started by {name}")
    kill_groups(list(groups))
    for said in groups.values():
        print(said)
    if (folder(home) / "state.json").exists():
        write_state(home, state)
    if not args.component:
        for head in stop_heads(recorded_heads(home)):
            where = f"{head.get('address')} (process group {head.get('pgid')})"
            print(f"stopped the loopback Ray head at {where}, started by a task here")
        # the shared head (if any) was among them: the next run starts a new one
        (heads_dir(home) / "shared.json").unlink(missing_ok=True)
    return 0


def status(args: argparse.Namespace) -> int:
    state = read_state(args.airflow_home)
    running = running_components(args.airflow_home)
    groups = {n: {"pgid": g, "alive": n in running} for n, g in state["groups"].items()}
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
        help="start (if not running) or stop only this component of a deployment `start` "
        "made, repeatable",
    )  # fmt: skip
    args = parser.parse_args(argv)
    args.airflow_home = args.airflow_home.expanduser().resolve()
    return {"start": start, "stop": stop, "status": status}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
