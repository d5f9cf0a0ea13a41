"""Relay a Ray job's log to the task log, fetching each byte once.

Ray's ``GET /api/jobs/<id>/logs`` answers the whole log, so polling it costs
O(n^2) bytes over a long job. The Jobs API also streams the log over a websocket,
``GET /api/jobs/<id>/logs/tail`` (Ray's own ``JobSubmissionClient.tail_job_logs``):
the log from its start, then each new chunk, closed once the job ended and its log
was read to the end. httpx has no websocket client; aiohttp, which Ray's dashboard
and SDK already require, has one. When the stream is unavailable (an old Ray, a
proxy that drops websockets, a refused upgrade), :class:`LineRelay` still prints
each line once by its character offset into the whole log.

:class:`LogFollower` runs the stream on a thread of its own for the operator's sync
poll loop; the triggers iterate :func:`astream_job_logs` themselves.
"""

from __future__ import annotations

import asyncio
import json
import queue
import threading
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

from airflow_provider_rayorch.common.progress import EVENT_MARKER, relay_line
from airflow_provider_rayorch.exceptions import RayOrchClusterUnavailable
from airflow_provider_rayorch.rayorch.plain_text import strip_ansi

if TYPE_CHECKING:
    import ssl
    from collections.abc import AsyncIterator, Callable

__all__ = [
    "STREAM_CLOSE_WAIT_S",
    "LineRelay",
    "LogFollower",
    "RunEvents",
    "astream_job_logs",
    "run_event",
]

#: Lines kept for the driver's ``RAYORCH_ERROR`` line when the job fails.
KEEP_LINES = 200
#: After the job ended, how long Ray may take to close its log stream (it reads the
#: log to its end first, polling every second).
STREAM_CLOSE_WAIT_S = 10.0
#: The most of an unfinished line :class:`RunEvents` and :class:`LineRelay` keep: a
#: run event is short, but a line a progress bar rewrites with carriage returns may
#: never end.
PARTIAL_MAX = 64 * 1024
#: The driver's events that change what a waiting task sees: a committed microbatch,
#: the run's end (the driver exits next).
RUN_EVENTS = frozenset({"microbatch", "end"})


def run_event(line: str) -> dict[str, Any] | None:
    """The driver's run event (:data:`RUN_EVENTS`) a log line carries, else None; a
    ``microbatch`` event's ``index`` is an int (one without a whole index is None)."""
    _, marker, payload = line.partition(EVENT_MARKER)
    if not marker:
        return None
    try:
        event = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(event, dict) or event.get("event") not in RUN_EVENTS:
        return None
    if event["event"] == "microbatch":
        index = event.get("index")
        if isinstance(index, str) and index.isdigit():
            index = int(index)
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            return None
        event["index"] = index
    return event


class RunEvents:
    """Splits a streamed log into lines and returns the driver's run events, without
    relaying anything (the triggerer's run watcher reads the stream this way). Of an
    unfinished line longer than :data:`PARTIAL_MAX` it keeps only what may still hold
    an event: from its last event marker, else the marker's length."""

    def __init__(self) -> None:
        self._partial = ""

    @property
    def pending(self) -> int:
        """Characters kept of the unfinished last line."""
        return len(self._partial)

    def feed(self, chunk: str) -> list[dict[str, Any]]:
        """The run events of the complete lines in ``chunk`` (a last unfinished line is
        kept for the next chunk)."""
        *lines, partial = (self._partial + chunk).split("\n")
        if len(partial) > PARTIAL_MAX:
            at = partial.rfind(EVENT_MARKER)
            keep = len(partial) - at if at >= 0 else len(EVENT_MARKER) - 1
            partial = partial[-min(keep, PARTIAL_MAX) :]
        self._partial = partial
        found = (run_event(strip_ansi(line.rstrip("\r"))) for line in lines)
        return [event for event in found if event is not None]


class LineRelay:
    """Prints each complete line once, as plain text; remembers how many characters it
    consumed, the last :data:`KEEP_LINES` lines, and the driver's run events (:data:`RUN_EVENTS`):
    whether one came since :meth:`take_news`, and whether the run's end came."""

    def __init__(self, log: Any, prefix: str) -> None:
        self.log, self.prefix = log, prefix
        self.consumed = 0
        self.tail: deque[str] = deque(maxlen=KEEP_LINES)
        self._partial = ""
        self._news = False
        #: the driver's ``end`` event was relayed: its process exits next
        self.run_ended = False

    def take_news(self) -> bool:
        """Whether a run event was relayed since the last call."""
        news, self._news = self._news, False
        return news

    @property
    def pending(self) -> int:
        """Characters kept of the unfinished last line."""
        return len(self._partial)

    def feed(self, chunk: str) -> None:
        """Relay the complete lines of a new ``chunk``; keep an unfinished last line.
        Of one longer than :data:`PARTIAL_MAX` only what follows its last carriage
        return is kept (what a terminal shows of a rewritten line); still longer, it
        is relayed as a line of its own."""
        self.consumed += len(chunk)
        *lines, partial = (self._partial + chunk).split("\n")
        if len(partial) > PARTIAL_MAX:
            partial = partial[max(partial.rfind("\r"), 0) :]
            if len(partial) > PARTIAL_MAX:
                lines.append(partial)
                partial = ""
        self._partial = partial
        for line in lines:
            self._relay(line)

    def feed_whole(self, log_text: str) -> None:
        """Relay what is new in ``log_text``, the whole log read again."""
        if len(log_text) > self.consumed:
            self.feed(log_text[self.consumed :])

    def flush(self) -> None:
        """Relay an unfinished last line (the job ended)."""
        if self._partial:
            line, self._partial = self._partial, ""
            self._relay(line)

    def _relay(self, line: str) -> None:
        line = strip_ansi(line.rstrip("\r"))  # the tail's error line must parse
        self.tail.append(line)
        relay_line(self.log, self.prefix, line)
        event = run_event(line)
        if event is not None:
            self._news = True
            if event["event"] == "end":
                self.run_ended = True


class JobsEndpoint(Protocol):
    """Where and how to reach Ray's Jobs API (the hook's ``JobsApi`` is one)."""

    @property
    def address(self) -> str: ...

    @property
    def timeout(self) -> float: ...

    def headers(self) -> dict[str, str]: ...

    def ssl_context(self) -> ssl.SSLContext | bool: ...


async def astream_job_logs(api: JobsEndpoint, job_id: str) -> AsyncIterator[str]:
    """The job's log as Ray streams it (from its start), until Ray closes the stream."""
    import aiohttp

    verify = api.ssl_context()  # False only when asked for; a context otherwise
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=api.timeout)
    async with (
        aiohttp.ClientSession(headers=api.headers(), timeout=timeout) as session,
        session.ws_connect(
            f"{api.address.rstrip('/')}/api/jobs/{job_id}/logs/tail",
            ssl=verify,
            heartbeat=30.0,
        ) as ws,
    ):
        async for msg in ws:
            if msg.type == aiohttp.WSMsgType.TEXT:
                yield str(msg.data)
            elif msg.type == aiohttp.WSMsgType.ERROR:
                raise RayOrchClusterUnavailable(
                    f"the log stream of job {job_id} broke: {ws.exception()}"
                )
    if ws.close_code not in (None, aiohttp.WSCloseCode.OK):  # e.g. a dashboard restarting
        raise RayOrchClusterUnavailable(
            f"the log stream of job {job_id} closed with {ws.close_code}"
        )


class LogFollower:
    """Streams a job's log on a daemon thread into a queue the poll loop drains, so
    the task log is written from the task's own thread.

    ``failed`` says the stream could not be used (then read the whole log by offset);
    ``ended`` that Ray closed it (the job ended and its log was read to the end).
    """

    def __init__(self, api_factory: Callable[[], JobsEndpoint], job_id: str) -> None:
        self._api_factory, self.job_id = api_factory, job_id
        self._chunks: queue.Queue[str] = queue.Queue()
        self.failed: BaseException | None = None
        self.received = 0
        self._done = threading.Event()
        self._activity = threading.Event()  # a chunk came, or the stream ended
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"rayorch-log-{job_id}", daemon=True)

    def start(self) -> LogFollower:
        self._thread.start()
        return self

    @property
    def ended(self) -> bool:
        return self._done.is_set() and self.failed is None

    def _run(self) -> None:
        try:
            asyncio.run(self._follow())
        except BaseException as exc:  # the relay falls back to offset reads
            self.failed = exc
        finally:
            self._done.set()
            self._activity.set()

    async def _follow(self) -> None:
        api = self._api_factory()
        async for chunk in astream_job_logs(api, self.job_id):
            self.received += len(chunk)
            self._chunks.put(chunk)
            self._activity.set()
            if self._stop.is_set():
                return

    def drain(self) -> str:
        """What arrived since the last drain."""
        parts = []
        while True:
            try:
                parts.append(self._chunks.get_nowait())
            except queue.Empty:
                return "".join(parts)

    def wait_activity(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for a chunk to :meth:`drain` or the stream's end."""
        came = self._activity.wait(timeout)
        self._activity.clear()  # a chunk put meanwhile is drained by the caller next
        return came

    def wait_closed(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for Ray to close the stream (the end of the log)."""
        return self._done.wait(timeout)

    def stop(self) -> None:
        """Stop after the next chunk (the thread is a daemon: it never blocks exit)."""
        self._stop.set()
