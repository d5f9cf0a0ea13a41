"""The live report's own thread: the commit loop hands it a report to write and goes on.

The driver thread snapshots what a report needs (the engine is read on its own
thread only) and :meth:`LiveReports.offer` s a job; the reporting thread writes the
newest job offered, one at a time. A slow report (a slow store) never holds a
commit: jobs offered meanwhile replace each other, and only the newest is written.
:meth:`LiveReports.close` writes the final report after every earlier one.
"""

from __future__ import annotations

import inspect
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

from airflow_provider_rayorch.runs.driver_events import emit as _emit

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow_provider_rayorch.runs.aggregate import RunAggregate
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["REPORT_TIMELINE", "LiveReports", "ReportWriter", "report_job"]

#: A report's timeline plots read at most this many of the engine's latest dispatch
#: and report records, and the driver keeps at most twice this many (about 170 to 330
#: microbatches of 1,000 tiny sources): what the timeline holds stops growing early in
#: a run, so the driver's memory does not grow with its length.
REPORT_TIMELINE = 4_000


class LiveReports:
    """Writes offered reports on a daemon thread, the newest first, at most every
    ``every_s`` seconds of offers (:meth:`due`)."""

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self._cond = threading.Condition()
        self._job: Callable[[], None] | None = None
        self._closed = False
        self._last_offer = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="rayorch-report", daemon=True)

    def start(self) -> LiveReports:
        self._thread.start()
        return self

    def due(self) -> bool:
        """Whether a live report is due (``every_s`` since the last offer)."""
        return time.monotonic() - self._last_offer >= self.every_s

    def offer(self, job: Callable[[], None]) -> None:
        """Have ``job`` run on the reporting thread (replacing one not started yet);
        returns at once."""
        with self._cond:
            self._job = job
            self._last_offer = time.monotonic()
            self._cond.notify()

    def close(self, final: Callable[[], None] | None, timeout_s: float) -> bool:
        """Write ``final`` after the report being written; False when that did not
        finish within ``timeout_s`` (the thread is a daemon: the process may end)."""
        with self._cond:
            self._job = final
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._job is None and not self._closed:
                    self._cond.wait()
                job, self._job = self._job, None
                closing = self._closed
            if job is not None:
                job()  # a job reports its own failure (the driver's _write_report)
            if closing and job is None:
                return


class ReportWriter(Protocol):
    """Writes a run's report into the run store; returns where it went.

    The driver knows nothing of reports: its entrypoint (:mod:`airflow_provider_rayorch.job`)
    hands one in. ``microbatches`` None: commit times come from the manifests (a repair).
    A writer that also takes ``live`` gets the run's
    :class:`~airflow_provider_rayorch.runs.aggregate.RunAggregate` (a snapshot).
    """

    def __call__(
        self,
        store: RunStore,
        run_id: str,
        timeline: list[Any],
        calls: list[Any],
        *,
        microbatches: list[Any] | None,
    ) -> str: ...


def _takes(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn`` takes the keyword argument ``name``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)


def _recent_timeline(executor: Any) -> list[Any]:
    """The engine's last :data:`REPORT_TIMELINE` timeline records (all of them from an
    engine whose ``timeline`` takes no ``last``)."""
    if _takes(executor.timeline, "last"):
        return list(executor.timeline(last=REPORT_TIMELINE))
    return list(executor.timeline())


def report_job(
    report: ReportWriter,
    store: RunStore,
    run_id: str,
    executor: Any,
    timings: list[Any] | None,
    live: RunAggregate | None = None,
) -> Callable[[], None]:
    """Snapshot what the report needs now (call on the driver thread: the engine is
    read there only); the returned job writes it, on any thread, best effort."""
    calls: list[Any] = []
    timeline: list[Any] = []
    try:
        calls = executor.call_metrics() if executor is not None else []
        timeline = _recent_timeline(executor) if executor is not None else []
    except Exception as exc:  # a report must never fail a run
        _emit("EVENT", {"event": "report_failed", "error": f"{type(exc).__name__}: {exc}"})
    done = None if timings is None else list(timings)
    extra = {"live": live.snapshot()} if live is not None and _takes(report, "live") else {}

    def job() -> None:
        try:
            uri = report(store, run_id, timeline, calls, microbatches=done, **extra)
            _emit("EVENT", {"event": "report", "uri": uri})
        except Exception as exc:  # a report must never fail a run
            _emit("EVENT", {"event": "report_failed", "error": f"{type(exc).__name__}: {exc}"})

    return job
