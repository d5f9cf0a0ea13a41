"""How a driver's end is recorded whatever ends it (:mod:`.run_state`).

:func:`recording_end` wraps the driver's body: an exception records ``failed`` with
its cause (then goes on), a keyboard interrupt or an exit by SIGTERM ``stopped``;
the driver log's SIGTERM handler (:mod:`.driver_log`) calls :func:`record_stopped`.
"""

from __future__ import annotations

import contextlib
import signal
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.rayorch.errors import DriverError
from airflow_provider_rayorch.runs.driver_events import emit

if TYPE_CHECKING:
    from collections.abc import Iterator

    from airflow_provider_rayorch.runs.run_state import DriverState

__all__ = ["record_stopped", "recording_end"]

_SIGTERM = "the driver was sent SIGTERM (its Ray job was stopped, or its task killed)"

#: Exit codes of a process ended by SIGTERM's handler (Ray's exits with the signal's number).
_SIGTERM_CODES = frozenset({int(signal.SIGTERM), 128 + int(signal.SIGTERM)})


def record_stopped(state: DriverState) -> None:
    """Record ``stopped`` (the driver was sent SIGTERM: its job stopped, its task killed)."""
    _record_end(state, "stopped", _SIGTERM)


@contextlib.contextmanager
def recording_end(state: DriverState | None) -> Iterator[None]:
    """Record the run's end in ``state`` when the block raises (then re-raise): a
    failure with its cause, ``stopped`` on SIGTERM or a keyboard interrupt. None:
    nothing is recorded (a repair's driver)."""
    if state is None:
        yield
        return
    try:
        yield
    except KeyboardInterrupt:
        _record_end(state, "stopped", "the driver was interrupted")
        raise
    except SystemExit as exc:
        if exc.code in _SIGTERM_CODES:  # Ray's own SIGTERM handler exits so
            _record_end(state, "stopped", _SIGTERM)
        else:
            _record_end(state, "failed", f"the driver exited with code {exc.code}")
        raise
    except BaseException as exc:
        cause = str(exc) if isinstance(exc, DriverError) else f"{type(exc).__name__}: {exc}"
        _record_end(state, "failed", cause)
        raise


def _record_end(state: DriverState, end: Any, reason: str) -> None:
    try:
        state.ended(end, reason)
    except Exception as exc:  # the run's own error is what the caller must see
        emit("EVENT", {"event": "state_not_recorded", "error": str(exc)})
