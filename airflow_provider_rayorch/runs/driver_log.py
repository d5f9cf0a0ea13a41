"""The driver's own log, kept in the run store: ``<run>/logs/driver-<n>.log``.

A Ray job's log lives in its head's temp dir and is gone with the head; an embedded
driver's output lives only in its task's log. So the driver keeps a copy of what it
writes to stdout and stderr (its progress and ``RAYORCH_*`` lines, Ray's messages,
the worker lines Ray forwards to it, a crash's traceback) and copies it into the run
store: when it starts, after each commit (at most every :data:`COMMIT_COPY_EVERY_S`),
every :data:`COPY_EVERY_S` while it runs, at a ``SIGTERM`` (a stopped job) and when it
ends, an exception included. A ``SIGKILL`` cannot be caught: the stored copy then
holds what was there at the last copy.

Each driver of a run (a first run, a resume, a repair) keeps its own file, numbered
in the order they started. The stored text is plain: ANSI codes removed, and every
secret value the driver was handed (run store options, ``runtime_env`` variables,
the Ray token) replaced by ``***``. Like Airflow's secrets masker, values shorter
than :data:`MIN_SECRET_CHARS` are not replaced (they would hide ordinary words and
numbers). The copy keeps the first :data:`HEAD_BYTES` and the last
:data:`TAIL_BYTES` of a longer log, saying how much it left out.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import re
import signal
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

import pyarrow.fs as pafs

from airflow_provider_rayorch.rayorch.plain_text import strip_ansi
from airflow_provider_rayorch.runs import paths
from airflow_provider_rayorch.runs.paths import driver_log_name
from airflow_provider_rayorch.runs.secrets import (
    RAY_INIT_KWARGS_ENV,
    ray_init_kwargs_from_env,
    ray_init_secrets,
    secret_option_values,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence
    from types import FrameType

    from airflow_provider_rayorch.runs.store import RunStore

__all__ = [
    "COMMIT_COPY_EVERY_S",
    "COPY_EVERY_S",
    "DriverLog",
    "StoredLog",
    "Tee",
    "driver_log_names",
    "driver_log_secrets",
    "driver_log_uri",
    "keep_driver_log",
    "read_driver_log_tail",
]

#: Seconds between two copies to the run store (at commits, and while none comes).
COPY_EVERY_S = 10.0
#: Seconds between two copies at commits (a commit is kept even if a SIGKILL follows).
COMMIT_COPY_EVERY_S = 1.0
#: A longer log keeps its first HEAD_BYTES and its last TAIL_BYTES.
HEAD_BYTES = 1_000_000
TAIL_BYTES = 3_000_000
#: Secret values shorter than this are not replaced (as Airflow's secrets masker).
MIN_SECRET_CHARS = 5
_HIDDEN = "***"
#: Ray's job config in a job driver's environment (its ``runtime_env``).
_RAY_JOB_CONFIG_ENV = "RAY_JOB_CONFIG_JSON_ENV_VAR"
#: The first line of a driver log (:func:`_header`) and its start time.
_HEADER = re.compile(r"^RayOrch driver log of run .*?: started (\S+) on ")


def driver_log_names(store: RunStore, run_id: str) -> list[str]:
    """The driver logs a run keeps, numbered ones in order, then any other
    ``driver-*.log`` file by name."""
    selector = pafs.FileSelector(
        posixpath.join(store.root, *paths.driver_logs(run_id)), allow_not_found=True
    )
    names = [
        info.base_name
        for info in store.fs.get_file_info(selector)
        if info.type == pafs.FileType.File and paths.is_driver_log(info.base_name)
    ]

    def order(name: str) -> tuple[int, int, str]:
        number = paths.driver_log_number(name)
        return (0, number, name) if number is not None else (1, 0, name)

    return sorted(names, key=order)


def driver_log_uri(store: RunStore, run_id: str, name: str) -> str:
    """The URI of a run's driver log ``name`` (before any query string)."""
    return store.record_uri((*paths.driver_logs(run_id), name))


@dataclass(frozen=True)
class StoredLog:
    """The end of a run's latest driver log, as the run store keeps it."""

    uri: str
    #: its last characters (a whole short log)
    tail: str
    #: when that driver started (None: the header does not say)
    started: datetime | None


def read_driver_log_tail(store: RunStore, run_id: str, max_chars: int = 20_000) -> StoredLog | None:
    """The last ``max_chars`` of the run's latest driver log, or None when it has none."""
    names = [n for n in driver_log_names(store, run_id) if paths.driver_log_number(n) is not None]
    if not names:
        return None
    path = posixpath.join(store.root, *paths.driver_logs(run_id), names[-1])
    try:
        with store.fs.open_input_file(path) as f:
            head = bytes(f.read(512))
            size = f.size()
            f.seek(max(size - max_chars, 0))
            tail = bytes(f.read())
    except FileNotFoundError:
        return None
    started = _HEADER.match(head.decode("utf-8", "replace"))
    when = None
    if started:
        with contextlib.suppress(ValueError):
            when = datetime.fromisoformat(started.group(1))
    return StoredLog(
        driver_log_uri(store, run_id, names[-1]), tail.decode("utf-8", "replace"), when
    )


def _token_values(environ: Mapping[str, str]) -> list[str]:
    """The Ray auth token this process may hold (its variable, or its file)."""
    found = [environ.get("RAY_AUTH_TOKEN") or ""]
    path = environ.get("RAY_AUTH_TOKEN_PATH") or os.path.expanduser("~/.ray/auth_token")
    with contextlib.suppress(OSError), open(path, encoding="utf-8") as f:
        found.append(f.read().strip())
    return found


def driver_log_secrets(
    store_options: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> list[str]:
    """Every secret value this driver holds: its run store's ``store_options`` (as it
    opened the store), its ``ray.init()`` options and ``runtime_env`` variables, the
    Ray token; longest first, those shorter than :data:`MIN_SECRET_CHARS` left out."""
    env = os.environ if environ is None else environ
    found = secret_option_values(store_options)
    found += [json.dumps(dict(store_options), sort_keys=True)] if store_options else []
    with contextlib.suppress(ValueError):
        found += ray_init_secrets(ray_init_kwargs_from_env(None, env))
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        config = json.loads(env.get(_RAY_JOB_CONFIG_ENV) or "{}")
        found += ray_init_secrets(None, config.get("runtime_env") or {})
    found += [env.get(RAY_INIT_KWARGS_ENV) or ""]
    found += _token_values(env)
    return sorted({s for s in found if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)


class Tee:
    """A text stream that writes to ``stream`` and hands the same text to ``log``."""

    def __init__(self, stream: TextIO, log: DriverLog) -> None:
        self._stream, self._log = stream, log

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        self._log.feed(text)
        return written

    def writelines(self, lines: Sequence[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:  # fileno, encoding, isatty, buffer, ...
        return getattr(self._stream, name)


class DriverLog:
    """One driver's log: the text fed to it, redacted line by line, kept in memory
    (bounded) and copied to the run store by :meth:`copy`."""

    def __init__(self, store: RunStore, run_id: str, secrets: Sequence[str] = ()) -> None:
        self.store, self.run_id = store, run_id
        self._secrets = [s for s in secrets if len(s) >= MIN_SECRET_CHARS]
        self._lock = threading.RLock()
        self._head = bytearray()
        self._tail = bytearray()
        self._left_out = 0
        self._partial = ""
        self._changed = False
        self._last_copy = 0.0
        self._warned = False
        names = driver_log_names(store, run_id)
        numbers = [m for n in names if (m := paths.driver_log_number(n)) is not None]
        self.number = max(numbers, default=0) + 1
        self.parts = paths.driver_log(run_id, self.number)
        self.uri = driver_log_uri(store, run_id, driver_log_name(self.number))

    def redact(self, line: str) -> str:
        """``line`` as plain text with every secret value replaced."""
        line = strip_ansi(line)
        for secret in self._secrets:
            if secret in line:
                line = line.replace(secret, _HIDDEN)
        return line

    def feed(self, text: str) -> None:
        """Keep the complete lines of ``text``; an unfinished last line waits."""
        with self._lock:
            *lines, self._partial = (self._partial + text).split("\n")
            for line in lines:
                self._keep(self.redact(line) + "\n")

    def _keep(self, line: str) -> None:
        data = line.encode("utf-8", "replace")
        self._changed = True
        room = HEAD_BYTES - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        self._tail += data
        if len(self._tail) > 2 * TAIL_BYTES:
            cut = len(self._tail) - TAIL_BYTES
            self._left_out += cut
            del self._tail[:cut]

    def text(self) -> bytes:
        """The log as it is copied: head, what was left out, tail, the unfinished line."""
        with self._lock:
            tail = self._tail
            left_out = self._left_out
            if len(tail) > TAIL_BYTES:
                left_out += len(tail) - TAIL_BYTES
                tail = tail[-TAIL_BYTES:]
            gap = f"[... {left_out} bytes left out ...]\n".encode() if left_out else b""
            partial = self.redact(self._partial).encode("utf-8", "replace")
            return bytes(self._head) + gap + bytes(tail) + partial

    def copy(self, *, every_s: float = 0.0) -> None:
        """Copy the log to the run store (``every_s`` > 0: only when it changed and
        ``every_s`` passed since the last copy). Never raises: the log must never fail
        a run."""
        with self._lock:
            now = time.monotonic()
            if every_s > 0 and (not self._changed or now - self._last_copy < every_s):
                return
            data, self._changed, self._last_copy = self.text(), False, now
            try:
                self.store.write_bytes(self.parts, data)
            except Exception as exc:
                if not self._warned:
                    self._warned = True
                    print(
                        f"cannot keep the driver's log in the run store ({self.uri}): {exc}",
                        file=sys.__stderr__,
                    )

    def copy_soon(self) -> None:
        """Copy the log if it changed and :data:`COMMIT_COPY_EVERY_S` passed since the
        last copy (called at each commit)."""
        self.copy(every_s=COMMIT_COPY_EVERY_S)

    def crashed(self, exc: BaseException) -> None:
        """Keep a crash's traceback (the interpreter prints it after the streams are
        the process's own again)."""
        with self._lock:
            if self._partial:
                self.feed("\n")
            self.feed("".join(traceback.format_exception(exc)))


def _header(run_id: str, argv: Sequence[str]) -> str:
    started = datetime.now(UTC).isoformat(timespec="seconds")
    return (
        f"RayOrch driver log of run {run_id}: started {started} on {socket.gethostname()} "
        f"(pid {os.getpid()}), arguments {' '.join(argv)}\n"
    )


def _copier(log: DriverLog, stop: threading.Event) -> None:
    while not stop.wait(max(COPY_EVERY_S, 1.0)):
        log.copy(every_s=COPY_EVERY_S)


@contextlib.contextmanager
def keep_driver_log(
    store: RunStore,
    run_id: str,
    argv: Sequence[str] = (),
    secrets: Sequence[str] | None = None,
    *,
    on_stop: Callable[[], None] | None = None,
) -> Iterator[DriverLog]:
    """Tee this process's stdout and stderr into a :class:`DriverLog` kept in the run
    store, copied as the module says, and restore the streams at the end; ``on_stop``
    is called at a ``SIGTERM``, before the log is copied."""
    if secrets is None:
        secrets = driver_log_secrets(store.options)
    log = DriverLog(store, run_id, secrets)
    log.feed(_header(run_id, argv))
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Tee(out, log), Tee(err, log)
    stop = threading.Event()
    copier = threading.Thread(target=_copier, args=(log, stop), name="rayorch-log", daemon=True)
    previous = _on_sigterm(log, on_stop)
    log.copy()
    copier.start()
    try:
        yield log
    except BaseException as exc:
        log.crashed(exc)
        raise
    finally:
        stop.set()
        copier.join(timeout=5)
        sys.stdout, sys.stderr = out, err
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        log.copy()


def _on_sigterm(log: DriverLog, on_stop: Callable[[], None] | None = None) -> Any:
    """On ``SIGTERM`` (Ray stopping the job), copy the log, then die of the signal as
    before. Only from the main thread, and only over the default handler; returns
    the handler to restore (None: none installed)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return None

    def stopped(signum: int, frame: FrameType | None) -> None:
        log.feed(f"\nstopped: signal {signum} (SIGTERM)\n")
        if on_stop is not None:
            on_stop()
        log.copy()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    return signal.signal(signal.SIGTERM, stopped)
