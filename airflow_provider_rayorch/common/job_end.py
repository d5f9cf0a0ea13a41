"""Why a run's Ray job ended before a task's microbatch committed, in the driver's
own words (the task's error says it, and what to do next).

The cause is the driver's ``RAYORCH_ERROR`` message, else the last line of its last
traceback, found in Ray's message about the job (a failed job's message holds the
end of its log), then in the driver's log the run store keeps
(:mod:`airflow_provider_rayorch.runs.driver_log`): that copy outlives the Ray head.
A stored log that started before the job did belongs to an earlier driver and is
not used. Failing both, Ray's own word is the cause. The task logs the driver's last
lines too, as plain text.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from airflow_provider_rayorch.common.driver_exit import error_line
from airflow_provider_rayorch.rayorch.plain_text import strip_ansi
from airflow_provider_rayorch.runs.driver_log import StoredLog, read_driver_log_tail

if TYPE_CHECKING:
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["TAIL_LINES", "JobEnd", "ajob_end", "driver_cause", "explain_job_end", "job_end"]

#: The driver's last lines a task logs with the cause.
TAIL_LINES = 20
_TRACEBACK = "Traceback (most recent call last):"
#: Ray's first line of a failed job's message, before the log it quotes.
_RAY_LOGS = ", last available logs"
#: A stored log whose driver started this long before the job is an earlier driver's.
_CLOCK_SLACK = timedelta(minutes=1)


class JobInfoSource(Protocol):
    """What reads Ray's record of a job (the hook does)."""

    def get_job_info(self, job_id: str) -> dict[str, Any] | None: ...

    async def aget_job_info(self, job_id: str) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class JobEnd:
    """Why a job ended first: the driver's cause (else Ray's word), where its whole
    log is kept, and its last lines."""

    cause: str
    #: the driver log the run store keeps (None: only the Ray job's log has it)
    log_uri: str | None = None
    tail: list[str] = field(default_factory=list)
    #: where the tail comes from
    source: str = ""

    @property
    def why(self) -> str:
        """``<cause>; the driver's log is kept at <uri>`` (for the task's error)."""
        where = (
            f"the driver's log is kept at {self.log_uri}"
            if self.log_uri
            else "the driver's log is the Ray job's log (the submit task's Ray job link)"
        )
        return f"{self.cause or 'no reason given'}; {where}"

    def log_tail(self, log: Any) -> None:
        """Log the driver's last lines at INFO, each as ``[driver] <line>``."""
        if not self.tail:
            return
        log.info("The driver's last lines (%s):", self.source)
        for line in self.tail:
            log.info("[driver] %s", line)


def _exception_line(text: str) -> str | None:
    """The exception line that ends the last traceback in ``text``."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.rstrip().endswith(_TRACEBACK)]
    if not starts:
        return None
    for line in lines[starts[-1] + 1 :]:
        if line.strip() and not line[:1].isspace():
            return line.strip()
    return None


def driver_cause(*texts: str) -> str | None:
    """The driver's own word on why it failed, from the first of ``texts`` that has
    one: its ``RAYORCH_ERROR`` message, else its last traceback's exception line."""
    for text in texts:
        plain = strip_ansi(text or "")
        error = error_line(plain)
        if error is not None and error.get("message"):
            return str(error["message"])
        line = _exception_line(plain)
        if line:
            return line
    return None


def _tail(text: str) -> list[str]:
    lines = [line.rstrip() for line in strip_ansi(text).splitlines() if line.strip()]
    return lines[-TAIL_LINES:]


def _ray_word(message: str) -> tuple[str, str]:
    """Ray's message as ``(its first line, the log it quotes)``."""
    first, _, rest = strip_ansi(message).strip().partition("\n")
    return first.split(_RAY_LOGS)[0].strip(), rest


def _current(stored: StoredLog | None, job_started: datetime | None) -> StoredLog | None:
    """``stored`` unless its driver started before the job (an earlier driver's log)."""
    if stored is None or stored.started is None or job_started is None:
        return stored
    return None if stored.started < job_started - _CLOCK_SLACK else stored


def explain_job_end(
    *,
    ray_message: str = "",
    stored: StoredLog | None = None,
    job_started: datetime | None = None,
) -> JobEnd:
    """Why the job ended, from Ray's message about it and the stored driver log."""
    stored = _current(stored, job_started)
    word, quoted = _ray_word(ray_message)
    cause = driver_cause(ray_message, stored.tail if stored else "") or word
    if stored is not None:
        return JobEnd(cause, stored.uri, _tail(stored.tail), stored.uri)
    return JobEnd(cause, None, _tail(quoted), "Ray's message about the job")


def _info_message(info: Any, job_id: str) -> tuple[str, datetime | None]:
    if info is None:
        return f"the cluster does not know job {job_id}", None
    if not isinstance(info, dict):
        return "", None
    started = None
    if info.get("start_time"):
        started = datetime.fromtimestamp(int(info["start_time"]) / 1000, UTC)
    return str(info.get("message") or ""), started


def job_end(hook: JobInfoSource, store: RunStore, run_id: str, job_id: str) -> JobEnd:
    """:func:`explain_job_end` with Ray's message and the stored driver log read here
    (best effort: either may be unreadable)."""
    try:
        message, started = _info_message(hook.get_job_info(job_id), job_id)
    except Exception:
        message, started = "", None
    try:
        stored = read_driver_log_tail(store, run_id)
    except Exception:
        stored = None
    return explain_job_end(ray_message=message, stored=stored, job_started=started)


async def ajob_end(hook: JobInfoSource, store: RunStore, run_id: str, job_id: str) -> JobEnd:
    """:func:`job_end` for triggers: the Jobs API awaited, the store read in a thread."""
    try:
        message, started = _info_message(await hook.aget_job_info(job_id), job_id)
    except Exception:
        message, started = "", None
    try:
        stored = await asyncio.to_thread(read_driver_log_tail, store, run_id)
    except Exception:
        stored = None
    return explain_job_end(ray_message=message, stored=stored, job_started=started)
