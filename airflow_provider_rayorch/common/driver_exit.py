"""The driver's way of saying why it failed, read in one place.

The driver (runs/driver.py) ends a failed run with one ``RAYORCH_ERROR {json}`` line
and a non-zero exit code; the code tells an import error, a compile error and a
changed plan (none worth a task retry) from a failed run. The operator (embedded
child process and Ray job) and the microbatch repair both read it here.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.exceptions import (
    RayOrchAirflowError,
    RayOrchCompileFailed,
    RayOrchJobFailed,
    RayOrchPipelineNotImportable,
    RayOrchPlanChanged,
)
from airflow_provider_rayorch.runs.exit_codes import EXIT_COMPILE, EXIT_IMPORT, EXIT_PLAN_CHANGED

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["ERROR_MARKER", "driver_exit_error", "error_from", "error_line", "exit_code"]

ERROR_MARKER = "RAYORCH_ERROR "


def driver_exit_error(code: int, message: str) -> RayOrchAirflowError:
    """The task's error for a driver that exited with ``code``."""
    kinds: dict[int, type[RayOrchAirflowError]] = {
        EXIT_IMPORT: RayOrchPipelineNotImportable,
        EXIT_COMPILE: RayOrchCompileFailed,
        EXIT_PLAN_CHANGED: RayOrchPlanChanged,
    }
    return kinds.get(int(code), RayOrchJobFailed)(message)


def error_line(text: str | Iterable[str]) -> dict[str, Any] | None:
    """The last ``RAYORCH_ERROR`` payload in ``text`` (a string or its lines); a
    payload that is not JSON is kept as its ``message``."""
    lines = text.splitlines() if isinstance(text, str) else list(text)
    for line in reversed(lines):
        _, marker, payload = line.partition(ERROR_MARKER)
        if marker:
            try:
                return dict(json.loads(payload))
            except ValueError:
                return {"message": payload}
    return None


def error_from(*texts: str) -> RayOrchAirflowError | None:
    """The driver's error from the first of ``texts`` holding an error line with an
    exit code (a log, then Ray's message with its log tail), else None."""
    for text in texts:
        error = error_line(text)
        if error is not None and "exit_code" in error:
            return driver_exit_error(int(error["exit_code"]), str(error.get("message")))
    return None


def exit_code(info: Mapping[str, Any] | None) -> int | None:
    """The driver's exit code from Ray's job info (``driver_exit_code``), if known."""
    code = (info or {}).get("driver_exit_code")
    try:
        return None if code is None else int(code)
    except (TypeError, ValueError):
        return None
