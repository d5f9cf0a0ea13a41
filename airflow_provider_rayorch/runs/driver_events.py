"""The driver's lines for programs: ``RAYORCH_EVENT {json}`` / ``RAYORCH_ERROR {json}``,
and the phases of its start.

The driver announces when its start reaches each :class:`StartPhase`, in this order::

    RAYORCH_EVENT {"at": 1764921600.25, "event": "start_phase", "phase": "process"}

``at`` is the moment the phase was reached, in epoch seconds (``time.time()``), so a
reader of the job's log splits job start -> first dispatch without timing anything
itself. A line may be printed after its moment (``dispatch`` is printed with the first
commit); ``at`` always says when it happened.
"""

from __future__ import annotations

import enum
import json
import os
import time
from typing import Any

__all__ = ["StartPhase", "emit", "process_started_at", "start_phase"]


class StartPhase(enum.StrEnum):
    """The points of a driver's start, in the order they are reached."""

    #: The driver process began (:func:`process_started_at`).
    PROCESS = "process"
    #: The package and the run's pipeline are imported, built and compiled.
    IMPORTED = "imported"
    #: The pools are started: the executor is open, Ray connected and one actor of
    #: every pool up (their other replicas join the run as they come up).
    POOLS = "pools"
    #: The run's first batch was dispatched to a worker.
    DISPATCH = "dispatch"


def emit(kind: str, payload: dict[str, Any]) -> None:
    """Print one ``RAYORCH_<kind> {json}`` line (keys sorted) and flush it."""
    print(f"RAYORCH_{kind} {json.dumps(payload, sort_keys=True)}", flush=True)


def start_phase(phase: StartPhase, at: float | None = None) -> None:
    """Announce that the start reached ``phase`` at ``at`` (epoch seconds; default now)."""
    moment = time.time() if at is None else at
    emit("EVENT", {"event": "start_phase", "phase": phase.value, "at": moment})


def process_started_at(fallback: float) -> float:
    """When this process began, in epoch seconds: its start in ``/proc/self/stat``
    (clock ticks since boot) against the boot clock, else ``fallback``."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            fields = fh.read().rpartition(")")[2].split()
        ticks = int(fields[19])  # field 22, starttime; the list begins at field 3
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return fallback
    return time.time() - age if 0 <= age < 86_400 * 365 else fallback
