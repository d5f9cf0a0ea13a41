"""Loopback Ray heads this provider started on this machine, found by their address.

A head started by ``start_local_head`` runs in token mode with a token file of its
own; it registers ``{"token_path", "pgid"}`` under its dashboard port in a
directory private to this user (``/tmp/rayorch-heads-<uid>``, or
``$RAYORCH_LOCAL_HEADS_DIR``). The hook looks an address up here, so any task given
the head's address (its XCom ``address``) sends the head's token, whatever the
connection says. The registry and the token file hold a path and a token only for
this user (modes 0700/0600); XCom, logs and reports never see the token. Imports
neither airflow nor ray.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["LocalHead", "lookup", "read_token", "register", "unregister"]

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


def _private_dir() -> Path:
    path = _registry()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise PermissionError(
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
        raise ValueError(f"{address!r} is not a loopback address with a port")
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
