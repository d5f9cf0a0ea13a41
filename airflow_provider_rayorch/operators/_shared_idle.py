"""The shared head's idle stop: a small process beside the head that stops it once no
job has run on it, and no run has found it, for ``idle_s`` seconds.

Started by :func:`._shared_head.shared_head` in a session of its own (a head's group is
never the group of the process that stops it); it exits when the head is gone or no
longer the machine's shared head. Run as
``python -m airflow_provider_rayorch.operators._shared_idle <pgid> <idle_s>`` with the
heads directory in ``RAYORCH_LOCAL_HEADS_DIR``.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.common import local_heads
from airflow_provider_rayorch.operators._head_groups import stop_recorded_heads

if TYPE_CHECKING:
    from collections.abc import Mapping

    import httpx

__all__ = ["busy", "check_once", "main"]

#: Seconds between two looks at the head's jobs.
POLL_S = 10.0
#: Seconds between two looks at whether the head's process still runs.
_ALIVE_POLL_S = 1.0
#: Job states that keep the head busy.
_ACTIVE = frozenset({"PENDING", "RUNNING"})


def busy(record: Mapping[str, Any], client: httpx.Client | None = None) -> bool:
    """A job on the head is pending or running (a head that does not answer is taken
    as busy: a loaded head is not stopped under a run). ``client``: the watch's own."""
    import httpx

    try:
        token = Path(str(record["token_path"])).read_text().strip()
        with contextlib.nullcontext(client) if client else httpx.Client() as http:
            response = http.get(
                f"{record['address']}/api/jobs/",
                headers={"Authorization": f"Bearer {token}"},
                timeout=10,
            )
        response.raise_for_status()
        jobs = response.json()
    except (OSError, ValueError, httpx.HTTPError):
        return True
    return any(str(job.get("status")) in _ACTIVE for job in jobs)


def check_once(
    pgid: int, idle_s: float, now: float | None = None, client: httpx.Client | None = None
) -> bool:
    """One look, under the shared turn: stop the head if it has been idle ``idle_s``
    seconds. Returns whether to keep watching."""
    with local_heads.shared_turn(lambda: False):
        record = local_heads.read_shared()
        if record is None or int(record.get("pgid") or 0) != pgid:
            return False  # stopped, or replaced by another head
        if not local_heads.still_runs(pgid, record.get("start")):
            return False  # gone: the next run replaces it
        now = time.time() if now is None else now
        if busy(record, client):
            local_heads.write_shared({**record, "used_at": now})
            return True
        used_at = float(record.get("used_at") or 0.0)
        if now - used_at < idle_s:
            return True
        print(f"the shared Ray head at {record['address']} was idle {idle_s:g}s: stopping it")
        local_heads.forget_shared()
        stop_recorded_heads(local_heads.SHARED_KEY)
        return False


def main(argv: list[str]) -> int:
    import httpx

    pgid, idle_s = int(argv[0]), float(argv[1])
    start = local_heads.process_start(pgid)
    with httpx.Client() as client:
        while True:
            next_look = time.monotonic() + min(POLL_S, idle_s)
            while time.monotonic() < next_look:  # a stopped head ends the watch at once
                if not local_heads.still_runs(pgid, start):
                    return 0
                time.sleep(_ALIVE_POLL_S)
            if not check_once(pgid, idle_s, client=client):
                return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
