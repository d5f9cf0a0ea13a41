"""Keeping a loopback Ray head's logs past its stop, and what they say.

A loopback head's logs live in its temp dir, which its stop removes. When
``$RAYORCH_HEAD_LOG_ARCHIVE`` names a folder, :func:`archive` (called by
``stop_local_head`` before it removes the temp dir) copies the head's
``ray-start.log`` and its session's ``logs/`` files there, into
``<archive>/<temp dir name>-<pgid>/`` (the tail of a big file only), with
``stop.json``: the head's address and process group, and whether ``ray start`` still
ran when the stop began (it exits when a Ray process of the head exits unexpectedly).

:func:`digest` reads an archive folder back: for every head that died or whose logs
say why one of its processes ended, the tail of its ``ray-start.log`` and the key
lines of its Ray logs. Token files are never copied. Imports neither airflow nor ray.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

__all__ = ["ARCHIVE_ENV", "KEY_WORDS", "archive", "archive_root", "digest", "what_logs_say"]

#: The variable naming the folder heads' logs are kept in (unset: none is kept).
ARCHIVE_ENV = "RAYORCH_HEAD_LOG_ARCHIVE"

#: Bytes kept of each log file (its tail).
TAIL_BYTES = 256 * 1024

#: Words of a log line that say why a Ray process ended or could not start.
KEY_WORDS = (
    "exited unexpectedly",
    "Address already in use",
    "bind",
    "died",
    "SIGTERM",
    "Failed to get node info",
    "timed out",
    "Timed out",
    "Check failed",
    "metrics server on port",
    "Error:",
    "Exception:",
)


def archive_root() -> Path | None:
    """The folder heads' logs are kept in, if one is configured."""
    root = os.environ.get(ARCHIVE_ENV)
    return Path(root) if root else None


def _tail(src: Path, dest: Path) -> None:
    size = src.stat().st_size
    with open(src, "rb") as f:
        if size > TAIL_BYTES:
            f.seek(size - TAIL_BYTES)
        data = f.read()
    dest.write_bytes(data)


def archive(head: dict[str, Any], *, leader_alive: bool) -> Path | None:
    """Copy the head's logs to the archive folder (if one is configured); returns
    where. Never raises: a stop must go on whatever the copy meets."""
    root = archive_root()
    temp_dir = Path(str(head.get("temp_dir") or ""))
    if root is None or not temp_dir.name or not temp_dir.is_dir():
        return None
    dest = root / f"{temp_dir.name}-{int(head['pgid'])}"
    with contextlib.suppress(OSError):
        (dest / "logs").mkdir(parents=True, exist_ok=True)
        sources = [(temp_dir / "ray-start.log", dest / "ray-start.log")]
        logs = temp_dir / "session_latest" / "logs"
        if logs.is_dir():
            sources += [(p, dest / "logs" / p.name) for p in sorted(logs.iterdir())]
        for src, target in sources:
            with contextlib.suppress(OSError):
                if src.is_file():
                    _tail(src, target)
        stop = {
            "address": head.get("address"),
            "pgid": int(head["pgid"]),
            "ray_start_alive": leader_alive,
            "stopped_at": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()) + " UTC",
        }
        (dest / "stop.json").write_text(json.dumps(stop))
        return dest
    return None


def _key_lines(path: Path, words: tuple[str, ...], limit: int) -> list[str]:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    found = [x for x in lines if x[:1].strip() and any(w in x for w in words)]  # no frames
    return [line[:400] for line in found][-limit:]


def what_logs_say(
    temp_dir: Path | str, *, limit: int = 5, most: int = 20, secret: str | None = None
) -> str:
    """The key lines (:data:`KEY_WORDS`) of a running or stopped head's Ray logs, in
    its temp dir, at most ``limit`` per file and ``most`` in all, ``secret`` (the
    head's token) masked: for an error about a head that did not come up. The metrics
    servers' "Address already in use" of every head after the first on a machine
    (fixed ports; Ray goes on without them) is left out. Empty when nothing is said."""
    out = [
        f"{name}: {line}"
        for name, found in _logs_key_lines(Path(temp_dir) / "session_latest" / "logs", limit)
        for line in found
        if not _metrics_port(line)
    ]
    said = "\n".join(out[:most])
    return said.replace(secret, "***") if secret else said


def _logs_key_lines(logs: Path, limit: int) -> list[tuple[str, list[str]]]:
    """``(file name, key lines)`` of each Ray log in ``logs`` that has any, at most
    ``limit`` lines per file (none when the folder cannot be read)."""
    with contextlib.suppress(OSError):
        files = sorted(p for p in logs.iterdir() if p.suffix in (".log", ".out", ".err"))
        return [(p.name, found) for p in files if (found := _key_lines(p, KEY_WORDS, limit))]
    return []


def _metrics_port(line: str) -> bool:
    """A metrics server's port taken by another head: harmless, never why a head failed."""
    return "Address already in use" in line and "metrics" in line.lower()


def _failed(head_dir: Path, stop: dict[str, Any]) -> bool:
    if stop.get("ray_start_alive") is False:
        return True
    files = [head_dir / "ray-start.log", *sorted((head_dir / "logs").glob("*"))]
    return any(_key_lines(p, ("exited unexpectedly",), 1) for p in files)


def _head_digest(head_dir: Path, stop: dict[str, Any], tail: int) -> list[str]:
    alive = stop.get("ray_start_alive")
    lines = [
        f"== Ray head {stop.get('address')} (process group {stop.get('pgid')}), stopped "
        f"{stop.get('stopped_at')}; `ray start` {'still ran' if alive else 'had exited'} "
        f"then; logs kept in {head_dir}",
        "-- ray-start.log (tail):",
    ]
    with contextlib.suppress(OSError):
        lines += (head_dir / "ray-start.log").read_text(errors="replace").splitlines()[-tail:]
    for name, found in _logs_key_lines(head_dir / "logs", 15):
        lines += [f"-- {name}:", *found]
    return lines


def digest(root: Path | str | None = None, *, tail: int = 25, every: bool = False) -> str:
    """What the archived heads' logs say: for each head that died (``ray start`` had
    exited when its stop began) or whose logs name an unexpected exit (every head
    with ``every``), its ``ray-start.log`` tail and the key lines (:data:`KEY_WORDS`)
    of its Ray logs. Every head after the first on a machine logs "Address already in
    use" for the dashboard's and autoscaler's metrics servers (fixed ports; Ray goes
    on without them): the line before it names the port. Empty when there is nothing
    to say."""
    folder = Path(root) if root is not None else archive_root()
    if folder is None or not folder.is_dir():
        return ""
    out: list[str] = []
    kept = 0
    for head_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        kept += 1
        try:
            stop = json.loads((head_dir / "stop.json").read_text())
        except (OSError, ValueError):
            stop = {}
        if every or _failed(head_dir, stop):
            out += _head_digest(head_dir, stop, tail)
    if not out:
        return ""
    return "\n".join([f"Logs of loopback Ray heads that failed ({kept} heads kept):", *out])
