"""Stopping loopback Ray heads by their process group, and the heads recorded for a
task instance (:mod:`airflow_provider_rayorch.common.local_heads`).

A head is stopped through its own process group (SIGTERM, then SIGKILL), never with
``ray stop``. A recorded head is signalled only while its group is still the one
recorded (its leader's start time); a head given by its info only while a process of
the group names its temp dir.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.common import head_logs, local_heads
from airflow_provider_rayorch.rayorch.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "group_members",
    "is_that_head",
    "stop_local_head",
    "stop_orphans",
    "stop_recorded_heads",
]


def group_members(pgid: int, *, reap: bool = True) -> list[Any]:
    """The live (not zombie) processes of group ``pgid``. ``reap``: first reap its
    leader (``ray start``) if it is this process's child and exited; a caller that
    reads the leader's exit code through its ``Popen`` passes ``False``."""
    import psutil

    if reap:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pgid, os.WNOHANG)
    members = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                members.append(proc)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return members


def stop_local_head(head: Mapping[str, Any], *, timeout: float = 10.0) -> None:
    """Stop the head's own process group: SIGTERM, then SIGKILL after ``timeout``;
    then keep its logs if ``$RAYORCH_HEAD_LOG_ARCHIVE`` says where
    (:func:`head_logs.archive`), remove its temp dir and its records."""
    pgid = int(head["pgid"])
    if pgid <= 1 or pgid == os.getpgrp():
        raise UsageError(
            f"stop_local_head: refusing to signal process group {pgid} (init's or this "
            "process's own); pass the record of a head this provider started"
        )
    if head.get("address"):
        local_heads.unregister(str(head["address"]))
    leader_alive = local_heads.process_start(pgid) is not None  # `ray start` exits if a part dies
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + (timeout if sig == signal.SIGTERM else 10.0)
        while time.monotonic() < deadline and group_members(pgid):
            time.sleep(0.2)
        if not group_members(pgid):
            break
    temp_dir = head.get("temp_dir")
    if temp_dir and os.path.basename(str(temp_dir)).startswith("rayh"):
        head_logs.archive(dict(head), leader_alive=leader_alive)
        shutil.rmtree(str(temp_dir), ignore_errors=True)
    local_heads.forget(pgid)


def _still_recorded(head: local_heads.StartedHead) -> bool:
    """The head's process group is still the one recorded: its leader alive with the
    recorded start time or, the leader gone, members none older than it (a group's
    number is not reused while it has members)."""
    members = group_members(head.pgid)
    if not members:
        return False
    if head.start is None:
        return True
    leader = local_heads.process_start(head.pgid)
    if leader is not None:
        return leader == head.start
    starts = [local_heads.process_start(p.pid) for p in members]
    return all(s is None or s >= head.start for s in starts)


def is_that_head(head: Mapping[str, Any]) -> bool:
    """``head``'s process group runs that head (a process of it names its temp dir), or
    is gone (then stopping it only removes what it left)."""
    members = group_members(int(head["pgid"]))
    temp_dir = str(head.get("temp_dir") or "")
    if not members:
        return True
    for proc in members:
        with contextlib.suppress(Exception):
            if temp_dir and any(temp_dir in arg for arg in proc.cmdline()):
                return True
    return False


def _stop_recorded(head: local_heads.StartedHead, timeout: float) -> bool:
    """Stop a recorded head if its group is still the one recorded; drop the record
    (keeping the logs of a head found dead, as ``stop_local_head`` does)."""
    if _still_recorded(head):
        stop_local_head(head.as_info(), timeout=timeout)
        return True
    if head.temp_dir and os.path.basename(head.temp_dir).startswith("rayh"):
        head_logs.archive(head.as_info(), leader_alive=False)
        shutil.rmtree(head.temp_dir, ignore_errors=True)
    local_heads.forget(head.pgid)
    return False


def stop_recorded_heads(key: str, *, timeout: float = 10.0) -> list[int]:
    """Stop every head recorded under task instance ``key``; returns their pgids."""
    return [h.pgid for h in local_heads.started_heads(key) if _stop_recorded(h, timeout)]


def stop_orphans(key: str) -> list[int]:
    """Stop the heads earlier tries of ``key`` were starting when they died."""
    orphans = [h for h in local_heads.started_heads(key) if not h.up and not h.starter_alive()]
    return [h.pgid for h in orphans if _stop_recorded(h, timeout=0)]
