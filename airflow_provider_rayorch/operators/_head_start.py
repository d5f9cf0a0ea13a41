"""Starting a loopback Ray head: ``ray start --head --block`` on 127.0.0.1 in a process
group of its own, in token mode with a token file of its own, recorded from the moment
its group exists (:mod:`airflow_provider_rayorch.common.local_heads`), announced once
it takes jobs."""

from __future__ import annotations

import functools
import logging
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.common import head_logs, local_heads
from airflow_provider_rayorch.exceptions import RayOrchClusterError, RayOrchHeadDied
from airflow_provider_rayorch.operators._head_groups import group_members, stop_local_head

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import httpx

__all__ = ["answers_jobs", "head_auth_env", "start_local_head", "stop_heads_starting_here"]

log = logging.getLogger(__name__)

#: How many heads one start may begin: a head whose Ray process died while it started
#: (:class:`RayOrchHeadDied`) is stopped and a new one begun, up to this many in all.
START_TRIES = 2


@dataclass
class _Starting:
    """A head this process is starting: its info once its process group exists, and
    whether the task was killed meanwhile."""

    head: dict[str, Any] | None = None
    killed: bool = False


#: The heads this process is starting (an ``on_kill`` may interrupt any of them).
_STARTING: list[_Starting] = []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ray_executable() -> str:
    candidate = os.path.join(os.path.dirname(sys.executable), "ray")
    found = candidate if os.path.exists(candidate) else shutil.which("ray")
    if not found:
        raise RayOrchClusterError(
            "the `ray` command is not installed next to this Python "
            f"({sys.executable}); install ray[default] in this environment",
        )
    return found


def _client(token: str) -> httpx.Client:
    """One HTTP client for a head's probes (its token, short timeouts)."""
    import httpx

    return httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=2)


def _dashboard_up(client: httpx.Client, url: str) -> bool:
    import httpx

    try:
        code = client.get(f"{url}/api/version").status_code
    except httpx.HTTPError:
        return False
    if code in (401, 403):
        raise RayOrchClusterError(
            f"the new Ray head at {url} refused its own token (HTTP {code}); "
            "`ray start` did not take RAY_AUTH_TOKEN_PATH: is this Ray older than 2.60?",
        )
    return code == 200


def _agent_up(client: httpx.Client, agent_url: str) -> bool:
    """The head's dashboard agent (which runs its jobs) answers its health check.

    Ray's dashboard answers ``/api/version`` before the agent is up, and until then a
    ``POST /api/jobs/`` waits about 10 s for it and fails with HTTP 500 "No available
    agent". ``/api/healthz`` is the agent's own check (its raylet and the GCS),
    public in token mode. The job head finds the agent through the GCS entry the
    agent writes right after its HTTP server starts: a submit in that short window
    gets the 500, which the submit retries (``RayOrchHook.submit_job``)."""
    import httpx

    try:
        return client.get(f"{agent_url}/api/healthz").status_code == 200
    except httpx.HTTPError:
        return False


def answers_jobs(head: Mapping[str, Any]) -> bool:
    """A head started here (its info) answers on its Jobs API and its job agent."""
    try:
        with open(str(head["token_path"])) as f:
            token = f.read().strip()
    except OSError:
        return False
    agent = head.get("agent_address")
    with _client(token) as client:
        return _dashboard_up(client, str(head["address"])) and (
            agent is None or _agent_up(client, str(agent))
        )


def _write_token(temp_dir: str, token: str | None = None) -> str:
    """``token`` (default: a fresh one) in ``<temp_dir>/auth_token`` (mode 0600); returns
    the file's path."""
    path = os.path.join(temp_dir, "auth_token")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token or secrets.token_hex(32))
    return path


def head_auth_env(token_path: str) -> dict[str, str]:
    """Ray variables of the head's process (and so of its jobs): token mode with the
    head's own token file, whatever this machine's environment says."""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": token_path}


def start_local_head(
    *,
    num_cpus: int | None = None,
    env: Mapping[str, str] | None = None,
    temp_root: str | None = None,
    timeout: float = 120.0,
    token: str | None = None,
    extra_args: Sequence[str] = (),
    key: str | None = None,
) -> dict[str, Any]:
    """Start a loopback Ray head in token mode; returns ``{"address", "gcs_address",
    "agent_address", "pgid", "temp_dir", "log", "token_path"}`` once it takes jobs: its
    Jobs API answers and its job agent is up.

    ``token``: the head's token (default: a fresh 256-bit one); it is only ever
    written to the head's token file. The head is recorded (under the task instance
    ``key``, see :func:`local_heads.run_key`) as soon as its process group exists.
    Until it is up, ``RayLocalHeadStartOperator.on_kill`` (a signal handler) stops it
    and the start fails.

    A head a Ray process of which dies while it starts is stopped (its logs archived,
    see :mod:`~airflow_provider_rayorch.common.head_logs`) and a new one begun, up to
    :data:`START_TRIES` heads in all."""
    start = functools.partial(
        _start_once,
        num_cpus=num_cpus,
        env=env,
        temp_root=temp_root,
        timeout=timeout,
        token=token,
        extra_args=extra_args,
        key=key,
    )
    for _ in range(START_TRIES - 1):
        try:
            return start()
        except RayOrchHeadDied as exc:
            log.warning("%s: starting a new head", exc)
    return start()


def _start_once(
    *,
    num_cpus: int | None,
    env: Mapping[str, str] | None,
    temp_root: str | None,
    timeout: float,
    token: str | None,
    extra_args: Sequence[str],
    key: str | None,
) -> dict[str, Any]:
    """One head's start (see :func:`start_local_head`)."""
    # Every port the head's processes listen on is chosen here, none left to Ray: the
    # raylet waits only about 15 s for an agent to report a port it picked itself (a
    # port file), and on a loaded machine a slow agent misses that and the raylet aborts
    # (`WaitForDashboardAgentPorts` / `WaitForRuntimeEnvAgentPort`), taking the head down.
    ports = local_heads.reserve_ports(7, _free_port)
    dashboard_port, gcs_port, client_port, agent_port = ports[:4]
    agent_grpc_port, metrics_port, runtime_env_port = ports[4:]
    temp_dir = tempfile.mkdtemp(prefix="rayh", dir=temp_root or "/tmp")  # mode 0700
    # a caller's RAY_AUTH_TOKEN in ``env`` becomes the file's token (the variable would win)
    token_path = _write_token(temp_dir, token or dict(env or {}).get("RAY_AUTH_TOKEN"))
    cmd = [
        _ray_executable(),
        "start",
        "--head",
        "--block",
        "--node-ip-address=127.0.0.1",
        f"--port={gcs_port}",
        "--dashboard-host=127.0.0.1",
        f"--dashboard-port={dashboard_port}",
        f"--ray-client-server-port={client_port}",
        f"--dashboard-agent-listen-port={agent_port}",
        f"--dashboard-agent-grpc-port={agent_grpc_port}",
        f"--metrics-export-port={metrics_port}",
        f"--runtime-env-agent-port={runtime_env_port}",
        f"--temp-dir={temp_dir}",
        "--disable-usage-stats",
        *([f"--num-cpus={int(num_cpus)}"] if num_cpus is not None else []),
        *extra_args,
    ]
    full_env = {**os.environ, **dict(env or {})}
    for var in ("RAY_ADDRESS", "RAY_AUTH_TOKEN"):  # RAY_AUTH_TOKEN would win over the file
        full_env.pop(var, None)
    full_env.update(head_auth_env(token_path))
    # On a busy machine Ray's own start waits (a raylet registering with the GCS) run
    # past their 30 s defaults: give them the room a loaded 2-core machine needs.
    full_env.setdefault("RAY_raylet_start_wait_time_s", "120")
    # Jobs run `python ...` on the head: make that this environment's Python.
    bindir = os.path.dirname(sys.executable)
    full_env["PATH"] = os.pathsep.join([bindir, full_env.get("PATH", "")])
    log_path = os.path.join(temp_dir, "ray-start.log")
    address = f"http://127.0.0.1:{dashboard_port}"
    starting = _Starting()
    _STARTING.append(starting)
    try:
        with local_heads.start_turn(lambda: starting.killed):
            with open(log_path, "w") as log:
                proc = subprocess.Popen(
                    cmd,
                    env=full_env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            starting.head = {"pgid": proc.pid, "temp_dir": temp_dir, "address": address}
            local_heads.note_started(proc.pid, temp_dir=temp_dir, address=address, key=key)
            return _wait_until_up(
                proc, starting, address, gcs_port, agent_port, token_path, timeout
            )
    except BaseException:
        if starting.head is not None:
            stop_local_head(starting.head, timeout=0 if starting.killed else 10.0)
        raise
    finally:
        _STARTING.remove(starting)
        local_heads.release_ports(ports)  # bound by the head now, or it is stopped


def _wait_until_up(
    proc: subprocess.Popen[bytes],
    starting: _Starting,
    address: str,
    gcs_port: int,
    agent_port: int,
    token_path: str,
    timeout: float,
) -> dict[str, Any]:
    temp_dir = os.path.dirname(token_path)
    log_path = os.path.join(temp_dir, "ray-start.log")
    agent_url = f"http://127.0.0.1:{agent_port}"
    info: dict[str, Any] = {
        "address": address,
        "gcs_address": f"127.0.0.1:{gcs_port}",
        "agent_address": agent_url,
        "pgid": proc.pid,
        "temp_dir": temp_dir,
        "log": log_path,
        "token_path": token_path,
    }
    with open(token_path) as f:
        token = f.read().strip()
    deadline = time.monotonic() + timeout
    waiting_for = "its Jobs API"
    raylet = _Raylet(proc.pid)
    with _client(token) as client:
        while time.monotonic() < deadline:
            if starting.killed:
                raise RayOrchClusterError(
                    f"killed while its Ray head at {address} was starting; the head is stopped",
                )
            if proc.poll() is not None:
                with open(log_path) as f:
                    tail = f.read()[-2000:]
                raise RayOrchHeadDied(
                    f"`ray start --head` exited with {proc.returncode} (log {log_path}):\n{tail}"
                    + _logs_say(temp_dir, token),
                )
            if raylet.died():
                raise RayOrchHeadDied(
                    f"the raylet of the Ray head at {address} exited while the head started "
                    f"(its log: {temp_dir}/session_latest/logs/raylet.out); on a busy machine "
                    "it aborts when the head's dashboard agent is slow to report its port"
                    + _logs_say(temp_dir, token),
                )
            if _dashboard_up(client, info["address"]):
                waiting_for = f"its job agent ({agent_url}/api/healthz)"
                if _agent_up(client, agent_url):
                    local_heads.register(info["address"], token_path, proc.pid)
                    local_heads.note_up(proc.pid)
                    return info
            time.sleep(0.5)
    raise RayOrchClusterError(
        f"the Ray head at {info['address']} did not get {waiting_for} up within "
        f"{timeout:g}s (log {log_path}; the head's logs are under {temp_dir}/session_latest/"
        "logs). Fix: on a busy machine give the head more time (startup_timeout)"
        + _logs_say(temp_dir, token),
    )


def _logs_say(temp_dir: str, token: str) -> str:
    """What the starting head's Ray logs say about it, for its error (read before its
    stop removes them; its token masked)."""
    said = head_logs.what_logs_say(temp_dir, secret=token)
    return f"\nIts Ray logs say:\n{said}" if said else ""


class _Raylet:
    """Whether a starting head's raylet, once seen in the head's process group, has
    exited (``ray start --block`` keeps running when it does)."""

    def __init__(self, pgid: int) -> None:
        self.pgid = pgid
        self.seen = False

    def died(self) -> bool:
        members = group_members(self.pgid, reap=False)  # `ray start`'s code is the start's
        alive = any(_name(member) == "raylet" for member in members)
        self.seen = self.seen or alive
        return self.seen and not alive


def _name(process: Any) -> str | None:
    import psutil

    try:
        return str(process.name())
    except psutil.Error:
        return None


def stop_heads_starting_here() -> list[int]:
    """Stop (at once) the heads this process is starting; their starts then fail.

    Runs in a signal handler (between two statements of the start): a start whose
    process group does not exist yet sees ``killed`` and stops its head itself."""
    stopped = []
    for starting in list(_STARTING):
        starting.killed = True
        if starting.head is not None:
            stop_local_head(starting.head, timeout=0)
            stopped.append(int(starting.head["pgid"]))
    return stopped
