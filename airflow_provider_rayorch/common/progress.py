"""Relaying the driver's output into a task log.

The driver prints human progress lines (``microbatch 3/6 committed: ...``) and,
for programs, ``RAYORCH_EVENT {json}`` / ``RAYORCH_ERROR {json}`` lines. Task logs
show the human lines at INFO; the machine lines go to DEBUG (still in the Ray job's
own log, and in the task log when its level is DEBUG), out of the reader's way.
Every line is relayed as plain text: Ray's ANSI colour codes are removed.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_rayorch.rayorch.plain_text import strip_ansi

__all__ = ["EVENT_MARKER", "is_machine_line", "relay_line"]

EVENT_MARKER = "RAYORCH_EVENT "


def is_machine_line(line: str) -> bool:
    return EVENT_MARKER in line


def relay_line(log: Any, prefix: str, line: str) -> None:
    """Log one line of driver output under ``prefix`` (``[driver]``, ``[ray job]``),
    as plain text."""
    line = strip_ansi(line)
    if is_machine_line(line):
        log.debug("%s %s", prefix, line)
    else:
        log.info("%s %s", prefix, line)
