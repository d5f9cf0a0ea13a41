"""Where a RayOrch job's start goes: job start -> first commit, split by the driver's
own marks.

The driver prints ``RAYORCH_EVENT {"event": "start_phase", "phase": P, "at": <epoch s>}``
for P in :data:`PHASES` (``runs/driver_events.py``): its process started, the package
and the pipeline imported and compiled, its pools started (Ray connected, one actor of
every pool up), its first batch dispatched. Those lines reach the job's log (Ray's
Jobs API) and the driver's log kept in the run store; :func:`start_marks` reads them
from either text, and :func:`start_split` turns them, Ray's job start and the first
commit into consecutive spans.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["PHASES", "SPLIT", "start_marks", "start_split"]

EVENT_MARKER = "RAYORCH_EVENT "
#: The driver's start phases, in the order a driver passes them.
PHASES = ("process", "imported", "pools", "dispatch")
#: Figure -> (from, to): consecutive spans that add up to job start -> first commit.
SPLIT = {
    "supervisor_s": ("job_start", "process"),
    "driver_imports_s": ("process", "imported"),
    "pool_starts_s": ("imported", "pools"),
    "to_first_dispatch_s": ("pools", "dispatch"),
    "first_batch_s": ("dispatch", "first_commit"),
}


def start_marks(*texts: str) -> dict[str, float]:
    """Each start phase's earliest ``at`` found in ``texts`` (log lines; a line may
    carry a prefix before the marker). Lines that are not start events are skipped."""
    marks: dict[str, float] = {}
    for text in texts:
        for line in text.splitlines():
            _, marker, payload = line.partition(EVENT_MARKER)
            if not marker:
                continue
            try:
                event = json.loads(payload)
            except ValueError:
                continue
            if not isinstance(event, dict) or event.get("event") != "start_phase":
                continue
            phase, at = event.get("phase"), event.get("at")
            if phase in PHASES and isinstance(at, int | float):
                marks[phase] = min(float(at), marks.get(phase, float("inf")))
    return marks


def start_split(facts: dict[str, Any]) -> dict[str, float | None]:
    """The :data:`SPLIT` spans (seconds) from ``facts``' epoch times (``job_start``,
    ``first_commit`` and the phases); None where a mark is missing."""
    out: dict[str, float | None] = {}
    for name, (a, b) in SPLIT.items():
        start, end = facts.get(a), facts.get(b)
        out[name] = None if start is None or end is None else round(end - start, 3)
    return out
