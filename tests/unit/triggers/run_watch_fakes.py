"""A counted run store, a fake Jobs API and a fake log stream for the run watcher's
tests: every store read and every job read is counted, and the test decides what the
stream says and when it breaks."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.exceptions import RayOrchClusterUnavailable
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.triggers import _run_watch
from airflow_provider_rayorch.triggers import rayorch as triggers

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    import pytest

    from airflow_provider_rayorch.runs.records import MicrobatchManifest, RunManifest

#: a stream item that breaks the stream
BREAK = object()


class CountedStore:
    """A local run store whose reads are counted by kind (``reads``) and whose
    microbatch manifest reads are listed by index (``manifest_reads``)."""

    def __init__(self, root: str) -> None:
        self.inner = RunStore(root)
        self.reads: Counter[str] = Counter()
        self.manifest_reads: list[int] = []
        self._target: tuple[int, asyncio.AbstractEventLoop, asyncio.Future[Any]] | None = None
        self.jobs: FakeJobs | None = None

    def at_listing(self, count: int) -> asyncio.Future[tuple[int, int]]:
        """Resolves, at the ``count``-th listing, to (store reads, job reads) so far."""
        loop = asyncio.get_running_loop()
        found: asyncio.Future[tuple[int, int]] = loop.create_future()
        self._target = (count, loop, found)
        return found

    def committed(self, run_id: str) -> frozenset[int]:
        self.reads["committed"] += 1
        if self._target is not None and self.reads["committed"] == self._target[0]:
            _, loop, found = self._target
            counts = (self.total(), self.jobs.job_reads if self.jobs else 0)
            loop.call_soon_threadsafe(lambda: found.done() or found.set_result(counts))
        return self.inner.committed(run_id)

    def manifest_record(self, run_id: str, index: int) -> MicrobatchManifest | None:
        self.reads["manifest_record"] += 1
        self.manifest_reads.append(index)
        return self.inner.manifest_record(run_id, index)

    def run_manifest_record(self, run_id: str) -> RunManifest | None:
        self.reads["run_manifest_record"] += 1
        return self.inner.run_manifest_record(run_id)

    def total(self) -> int:
        return sum(self.reads.values())


@dataclass
class FakeJobs:
    """The Jobs API as the run watcher sees it: a status, counted reads, and a log
    stream fed by :meth:`say` (a chunk of log), :meth:`announce` (a driver event) and
    :meth:`break_stream`; ``stream=False`` refuses the stream at once."""

    status: str = "RUNNING"
    stream: bool = True
    job_reads: int = 0
    streams_opened: int = 0
    closes: int = 0
    #: the log the streams brought so far
    log: str = ""
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)

    def say(self, text: str) -> None:
        self.queue.put_nowait(text)

    def announce(self, event: str, **fields: Any) -> None:
        self.say(f"RAYORCH_EVENT {json.dumps({'event': event, **fields})}\n")

    def break_stream(self) -> None:
        self.queue.put_nowait(BREAK)

    async def logs(self, api: Any, job_id: str) -> AsyncIterator[str]:
        """Ray's stream: the log from its start (what earlier streams brought), then
        what is said."""
        self.streams_opened += 1
        if not self.stream:
            raise RayOrchClusterUnavailable("no log stream here")
        if self.log:
            yield self.log
        while True:
            item = await self.queue.get()
            if item is BREAK:
                raise RayOrchClusterUnavailable(f"the log stream of job {job_id} broke")
            if item is None:
                return
            self.log += item
            yield item


def install(monkeypatch: pytest.MonkeyPatch, store: CountedStore, jobs: FakeJobs) -> None:
    """Answer the triggers' hook from ``store`` and ``jobs``."""
    hook = triggers.RayOrchHook
    store.jobs = jobs

    async def arun_store(self: Any, uri: str | None = None) -> CountedStore:
        return store

    async def status(self: Any, job_id: str) -> str:
        jobs.job_reads += 1
        return jobs.status

    async def info(self: Any, job_id: str) -> dict[str, str]:
        jobs.job_reads += 1
        return {"status": jobs.status, "message": ""}

    async def aapi(self: Any) -> object:
        return object()

    async def aclose(self: Any) -> None:
        jobs.closes += 1

    monkeypatch.setattr(hook, "arun_store", arun_store)
    monkeypatch.setattr(hook, "aget_job_status", status)
    monkeypatch.setattr(hook, "aget_job_info", info)
    monkeypatch.setattr(hook, "aapi", aapi)
    monkeypatch.setattr(hook, "aclose", aclose)
    monkeypatch.setattr(_run_watch, "astream_job_logs", jobs.logs)


#: a poll interval or look no test waits out: what wakes a trigger is the stream
NEVER_S = 600.0


def trigger_of(
    tmp_path: Path, index: int, poll_interval: float = NEVER_S
) -> triggers.RayOrchMicrobatchTrigger:
    """Microbatch ``index``'s trigger of run ``r`` (job ``j``) in the store at ``tmp_path``."""
    return triggers.RayOrchMicrobatchTrigger(
        run_id="r", run_store=str(tmp_path), index=index, job_id="j", poll_interval=poll_interval
    )


async def until(check: Any) -> None:
    """Yield to the loop until ``check()`` (the test's watchdog bounds it)."""
    while True:
        if check():
            return
        await asyncio.sleep(0)


async def first_event(trigger: Any) -> dict[str, Any]:
    """The trigger's first event's payload."""
    async for event in trigger.run():
        return dict(event.payload)
    raise AssertionError("the trigger ended without an event")
