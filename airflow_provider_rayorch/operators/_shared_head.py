"""This machine's shared loopback Ray head: one for every run that asks for it.

``local_head="shared"`` (``rayorch_microbatch_group``) and
``RayLocalHeadStartOperator(shared=True)`` find the head that is up, or start one:
the first run on a machine starts it, every later run finds it again, and runs
starting together start it once (``local_heads.shared_turn``, a file lock). A head
whose ``ray start`` process is gone (killed, or a part of it died) is stopped and
replaced by the next run. No run stops it: it stops itself once idle (no job on it and
no run finding it for ``idle_s`` seconds, ``$RAYORCH_SHARED_HEAD_IDLE_S``, default
600; :mod:`._shared_idle`), and ``scripts/deployment.py stop`` stops it (the head is
recorded in the deployment's heads directory like every head a task starts), as does
:func:`stop_shared_head`. Its logs stay in its temp dir while it runs and are
archived when it stops (``$RAYORCH_HEAD_LOG_ARCHIVE``).

The first start decides the head's CPUs and its ``PYTHONPATH``; a run asking for
other CPUs is told so in its log.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.common import local_heads
from airflow_provider_rayorch.operators._head_groups import stop_recorded_heads
from airflow_provider_rayorch.operators._head_start import answers_jobs, start_local_head
from airflow_provider_rayorch.rayorch.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["DEFAULT_IDLE_S", "SharedHead", "idle_seconds", "shared_head", "stop_shared_head"]

#: Seconds between two looks at a shared head that is up but slow to answer.
_ANSWER_POLL_S = 0.5
#: Seconds a shared head stays up with no job and no run finding it, by default.
DEFAULT_IDLE_S = 600.0


def idle_seconds() -> float:
    """``$RAYORCH_SHARED_HEAD_IDLE_S`` (seconds), or :data:`DEFAULT_IDLE_S`."""
    raw = os.environ.get("RAYORCH_SHARED_HEAD_IDLE_S")
    try:
        return float(raw) if raw else DEFAULT_IDLE_S
    except ValueError:
        raise UsageError(
            f"RAYORCH_SHARED_HEAD_IDLE_S={raw!r} is not a number of seconds; set it to, "
            "for example, 600"
        ) from None


def _watch_idle(info: Mapping[str, Any], idle_s: float) -> None:
    """Start the head's idle stop in a session of its own, its output in the head's
    temp dir (kept with the head's logs)."""
    env = {**os.environ, "RAYORCH_LOCAL_HEADS_DIR": str(local_heads.directory())}
    with open(os.path.join(str(info["temp_dir"]), "idle-stop.log"), "w") as log:
        subprocess.Popen(
            [sys.executable, "-m", __package__ + "._shared_idle", str(info["pgid"]), str(idle_s)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


@dataclass(frozen=True)
class SharedHead:
    """The shared head as found or started, and whether this call started it."""

    info: dict[str, Any]
    started: bool


def _runs(record: Mapping[str, Any]) -> bool:
    """The recorded head's ``ray start`` process still runs (same pid, same start)."""
    return local_heads.still_runs(int(record["pgid"]), record.get("start"))


def _answering(info: Mapping[str, Any], timeout: float) -> bool:
    """The running head answers jobs within ``timeout`` (a busy head answers late)."""
    deadline = time.monotonic() + timeout
    while True:
        if answers_jobs(info):
            return True
        if time.monotonic() >= deadline or not _runs(info):
            return False
        time.sleep(_ANSWER_POLL_S)


def shared_head(
    *,
    num_cpus: int | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
    stopped: Callable[[], bool] = lambda: False,
) -> SharedHead:
    """The machine's shared head: the recorded one if it runs and answers, else a new
    one started within ``timeout`` seconds (``num_cpus`` and ``env`` apply to a start
    only). ``stopped()`` saying True while waiting for another run's start fails it."""
    with local_heads.shared_turn(stopped):
        record = local_heads.read_shared()
        if record is not None:
            if _runs(record) and _answering(record, timeout):
                local_heads.write_shared({**record, "used_at": time.time()})
                return SharedHead(dict(record), started=False)
            local_heads.forget_shared()
        # the recorded head is gone or hung, or a start died before it recorded its
        # head: whatever is left of them (their groups as recorded) is stopped
        stop_recorded_heads(local_heads.SHARED_KEY, timeout=0)
        info = start_local_head(
            num_cpus=num_cpus, env=env, timeout=timeout, key=local_heads.SHARED_KEY
        )
        info["num_cpus"] = num_cpus
        info["start"] = local_heads.process_start(int(info["pgid"]))
        local_heads.write_shared({**info, "used_at": time.time()})
        _watch_idle(info, idle_seconds())
        return SharedHead(info, started=True)


def stop_shared_head(*, timeout: float = 10.0) -> dict[str, Any] | None:
    """Stop the machine's shared head (if one is recorded); returns what was stopped.
    A run using it fails (its job's head is gone); the next run starts a new one."""
    with local_heads.shared_turn(lambda: False):
        record = local_heads.read_shared()
        local_heads.forget_shared()
        stop_recorded_heads(local_heads.SHARED_KEY, timeout=timeout)
        return record
