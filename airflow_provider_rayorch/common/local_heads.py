"""Loopback Ray heads this provider started on this machine, found by their address.

A head started by ``start_local_head`` runs in token mode with a token file of its
own; it registers ``{"token_path", "pgid"}`` under its dashboard port in a
directory private to this user (``/tmp/rayorch-heads-<uid>``, or
``$RAYORCH_LOCAL_HEADS_DIR``). The hook looks an address up here, so any task given
the head's address (its XCom ``address``) sends the head's token, whatever the
connection says. The registry and the token file hold a path and a token only for
this user (modes 0700/0600); XCom, logs and reports never see the token.

Every head ``start_local_head`` starts is also recorded from the moment its process
group exists, before it is announced: ``started/<pgid>.json`` with the group's leader
and its start time, the head's temp dir and address, the process that started it
(pid and start time), the key of the task instance that started it (``run_key``) and
whether it came up. A head's teardown stops every head recorded under its setup's
key, a setup try stops the heads earlier tries of its key were still starting when
they died, and scripts/deployment.py's ``stop`` stops every head recorded in its own
directory. The ports a head is given are reserved here until it has bound them
(``reserve_ports``), so heads started at once never get the same one. Imports
neither airflow nor ray.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from airflow_provider_rayorch.exceptions import RayOrchClusterError, RayOrchHeadsDirNotPrivate
from airflow_provider_rayorch.rayorch.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

__all__ = [
    "SHARED_KEY",
    "LocalHead",
    "StartedHead",
    "directory",
    "forget",
    "forget_shared",
    "lookup",
    "note_started",
    "note_up",
    "process_start",
    "read_shared",
    "read_token",
    "register",
    "release_ports",
    "reserve_ports",
    "run_key",
    "shared_turn",
    "start_turn",
    "started_heads",
    "still_runs",
    "unregister",
    "write_shared",
]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class LocalHead:
    """A registered loopback head: its Jobs API address, token file and process group."""

    address: str
    token_path: str
    pgid: int


def _registry() -> Path:
    root = os.environ.get("RAYORCH_LOCAL_HEADS_DIR") or f"/tmp/rayorch-heads-{os.getuid()}"
    return Path(root)


def directory() -> Path:
    """Where this process records heads (``$RAYORCH_LOCAL_HEADS_DIR`` or the default)."""
    return _registry()


def _private_dir() -> Path:
    path = _registry()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise RayOrchHeadsDirNotPrivate(
            f"{path} must be a directory of this user with mode 0700 (it holds Ray token "
            "paths); remove it or set RAYORCH_LOCAL_HEADS_DIR to a private directory"
        )
    return path


def _port(address: str) -> int | None:
    parts = urlsplit(address if "://" in address else f"http://{address}")
    if (parts.hostname or "") not in LOOPBACK_HOSTS:
        return None
    return parts.port


def register(address: str, token_path: str, pgid: int) -> None:
    """Record a head started by this provider (called by ``start_local_head``)."""
    port = _port(address)
    if port is None:
        raise UsageError(
            f"local_heads.register({address!r}): not a loopback address with a port; "
            "record only a head started on 127.0.0.1 (http://127.0.0.1:<port>)"
        )
    entry = _private_dir() / str(port)
    tmp = entry.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"address": address, "token_path": token_path, "pgid": int(pgid)}, f)
    os.replace(tmp, entry)


def unregister(address: str) -> None:
    port = _port(address)
    if port is not None:
        with contextlib.suppress(FileNotFoundError):
            (_registry() / str(port)).unlink()


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lookup(address: str | None) -> LocalHead | None:
    """The provider's live loopback head at ``address``, if there is one."""
    port = _port(address or "")
    if port is None:
        return None
    entry = _registry() / str(port)
    try:
        data = json.loads(entry.read_text())
        head = LocalHead(str(data["address"]), str(data["token_path"]), int(data["pgid"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _alive(head.pgid) or not os.path.isfile(head.token_path):
        return None  # a head that died without its teardown: its port may be anyone's now
    return head


def read_token(head: LocalHead) -> str:
    """The head's token (strip the newline a file may end with)."""
    return Path(head.token_path).read_text().strip()


# -- heads started, by their process group -----------------------------------------------


@dataclass(frozen=True)
class StartedHead:
    """A head as recorded when its process group was made (``started/<pgid>.json``)."""

    pgid: int
    start: int | None
    temp_dir: str
    address: str
    run_key: str | None
    starter_pid: int
    starter_start: int | None
    up: bool

    def as_info(self) -> dict[str, object]:
        """What ``stop_local_head`` takes."""
        return {"pgid": self.pgid, "temp_dir": self.temp_dir, "address": self.address}

    def starter_alive(self) -> bool:
        """The process that started the head still runs (same pid, same start time)."""
        if self.starter_start is None:
            return False
        return process_start(self.starter_pid) == self.starter_start


def process_start(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, from ``/proc``): with the pid it
    names one process. None for no such (or a zombie) process, or without ``/proc``."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else int(fields[19])


def still_runs(pid: int, start: object) -> bool:
    """Process ``pid`` is still the one that started at ``start`` (``process_start``)."""
    return start is not None and process_start(pid) == start


def run_key(dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> str:
    """The key of one task instance's heads, whatever its try."""
    ident = json.dumps([dag_id, run_id, task_id, int(map_index)])
    return hashlib.sha256(ident.encode()).hexdigest()[:32]


def _started_dir() -> Path:
    path = _private_dir() / "started"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def _write(path: Path, data: Mapping[str, object]) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def note_started(pgid: int, *, temp_dir: str, address: str, key: str | None = None) -> None:
    """Record a head whose process group (led by ``pgid``) was just made by this process."""
    data = {
        "pgid": int(pgid),
        "start": process_start(pgid),
        "temp_dir": temp_dir,
        "address": address,
        "run_key": key,
        "starter_pid": os.getpid(),
        "starter_start": process_start(os.getpid()),
        "up": False,
    }
    _write(_started_dir() / f"{int(pgid)}.json", data)


def note_up(pgid: int) -> None:
    """The recorded head takes jobs (its setup announces it)."""
    path = _started_dir() / f"{int(pgid)}.json"
    with contextlib.suppress(OSError, ValueError):
        _write(path, {**json.loads(path.read_text()), "up": True})


def forget(pgid: int) -> None:
    """Drop a head's record (it is stopped)."""
    with contextlib.suppress(FileNotFoundError):
        (_registry() / "started" / f"{int(pgid)}.json").unlink()


def started_heads(key: str | None = None) -> list[StartedHead]:
    """The recorded heads (those of task instance ``key`` if given), oldest first."""
    found = []
    for path in sorted((_registry() / "started").glob("*.json")):
        try:
            data = json.loads(path.read_text())
            head = StartedHead(
                pgid=int(data["pgid"]),
                start=None if data.get("start") is None else int(data["start"]),
                temp_dir=str(data.get("temp_dir") or ""),
                address=str(data.get("address") or ""),
                run_key=data.get("run_key"),
                starter_pid=int(data["starter_pid"]),
                starter_start=data.get("starter_start"),
                up=bool(data.get("up")),
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if key is None or head.run_key == key:
            found.append(head)
    return sorted(found, key=lambda h: h.start or 0)


# -- ports of heads being started ----------------------------------------------------------

#: Seconds a port stays reserved for a head that never releases it (its starter died).
PORT_HOLD_S = 600.0


@contextlib.contextmanager
def _ports_locked() -> Iterator[Path]:
    import fcntl

    path = _private_dir() / "ports.json"
    with open(_private_dir() / "ports.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield path
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


#: Seconds between two looks at the start turn.
_TURN_POLL_S = 0.2


@contextlib.contextmanager
def _turn(lock_name: str, stopped: Callable[[], bool], waiting: str) -> Iterator[None]:
    """Hold this machine's lock ``lock_name`` (a file in the registry); waits for it,
    failing once ``stopped()`` says True while it waits."""
    import fcntl

    with open(_private_dir() / lock_name, "a") as lock:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if stopped():
                    raise RayOrchClusterError(
                        f"killed while {waiting}; nothing was started"
                    ) from None
                time.sleep(_TURN_POLL_S)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def start_turn(stopped: Callable[[], bool]) -> contextlib.AbstractContextManager[None]:
    """This machine's loopback heads start one at a time: held from ``ray start`` until
    the head takes jobs. Heads started together on a busy machine starve each other's
    agents, and Ray's raylet aborts when an agent does not report its port within about
    15 s. Waits for the turn (not counted in a start's timeout); once ``stopped()``
    says True while it waits, the start fails with nothing started."""
    return _turn("start.lock", stopped, "its Ray head waited for its turn to start")


# -- the machine's shared head ------------------------------------------------------------

#: The run key the shared head is recorded under (no task instance owns it).
SHARED_KEY = "shared"


def shared_turn(stopped: Callable[[], bool]) -> contextlib.AbstractContextManager[None]:
    """Held while a run finds (or starts) the shared head: runs starting together
    start it once."""
    return _turn("shared.lock", stopped, "it waited for the shared Ray head")


def read_shared() -> dict[str, Any] | None:
    """The shared head's info as recorded when it came up, or None."""
    try:
        data = json.loads((_private_dir() / "shared.json").read_text())
    except (OSError, ValueError):
        return None
    return dict(data) if isinstance(data, dict) else None


def write_shared(info: Mapping[str, object]) -> None:
    """Record ``info`` as this machine's shared head."""
    _write(_private_dir() / "shared.json", info)


def forget_shared() -> None:
    """Drop the shared head's record (it is stopped or gone)."""
    with contextlib.suppress(FileNotFoundError):
        (_private_dir() / "shared.json").unlink()


def _reserved(path: Path) -> dict[str, float]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    now = time.time()
    return {str(p): float(t) for p, t in dict(data).items() if float(t) > now}


def reserve_ports(count: int, pick: Callable[[], int]) -> list[int]:
    """``count`` distinct ports from ``pick`` (a free-port probe), none reserved by
    another head being started on this machine; they stay reserved until
    :func:`release_ports` (or :data:`PORT_HOLD_S`). A probe's port is free only until
    its socket closes: two heads started at once could otherwise probe the same port
    and the second to bind it would fail."""
    with _ports_locked() as path:
        reserved = _reserved(path)
        ports: list[int] = []
        while len(ports) < count:
            port = pick()
            if str(port) not in reserved and port not in ports:
                ports.append(port)
        until = time.time() + PORT_HOLD_S
        _write(path, {**reserved, **{str(p): until for p in ports}})
    return ports


def release_ports(ports: Iterable[int]) -> None:
    """Drop the reservations of ``ports`` (the head bound them, or its start failed)."""
    with _ports_locked() as path:
        gone = {str(p) for p in ports}
        _write(path, {p: t for p, t in _reserved(path).items() if p not in gone})
