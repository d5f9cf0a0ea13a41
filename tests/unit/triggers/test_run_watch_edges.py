"""Edges of the run watcher: triggers joining with different poll intervals, a
watcher that ended or could not open its store leaving the registry, a job read that
fails oddly, the watcher's logging context, and malformed run events. Counted
against a local store and a fake Jobs API; no test waits out a poll interval."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from airflow_provider_rayorch.common.log_relay import PARTIAL_MAX, LineRelay, RunEvents
from airflow_provider_rayorch.exceptions import RayOrchClusterError
from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.triggers import _run_watch
from airflow_provider_rayorch.triggers import rayorch as triggers
from airflow_provider_rayorch.triggers.rayorch import RayOrchMicrobatchTrigger
from tests.unit.triggers import run_watch_fakes as fake

pytestmark = pytest.mark.timeout(60)


def test_a_trigger_with_a_shorter_poll_interval_shortens_the_watchers_pause(
    monkeypatch, tmp_path
) -> None:
    """The first trigger polls every 600 s; one joining with 0.01 s sees the job's
    end at its own cadence, not after the first one's pause."""
    monkeypatch.setattr(triggers, "COMMIT_LOOK_S", fake.NEVER_S)
    store, jobs = fake.CountedStore(str(tmp_path)), fake.FakeJobs(stream=False)
    fake.install(monkeypatch, store, jobs)

    async def why(self, hook, store) -> str:
        return "the driver's cause"

    monkeypatch.setattr(RayOrchMicrobatchTrigger, "_why_ended", why)

    async def scenario() -> dict[str, Any]:
        slow = asyncio.create_task(fake.first_event(fake.trigger_of(tmp_path, 0)))
        await fake.until(lambda: jobs.job_reads == 1)  # the watcher's first read, then 600 s
        jobs.status = "FAILED"
        fast = asyncio.create_task(fake.first_event(fake.trigger_of(tmp_path, 1, 0.01)))
        event = await asyncio.wait_for(fast, 10)
        await asyncio.wait_for(slow, 10)  # the end wakes every waiter
        return event

    event = asyncio.run(scenario())
    assert (event["status"], event["index"]) == ("error", 1)
    assert "ended FAILED" in event["message"]


def test_a_watcher_that_ended_leaves_the_registry_so_a_later_trigger_reads_afresh(
    monkeypatch, tmp_path
) -> None:
    """The job could not be read (the retry budget ran out) while the run trigger
    still ends its task: a microbatch trigger attaching meanwhile starts a new watcher
    that reads the job again, rather than taking the old watcher's error."""
    store, jobs = fake.CountedStore(str(tmp_path)), fake.FakeJobs(stream=False)
    fake.install(monkeypatch, store, jobs)
    ending = asyncio.Event()
    reads: list[str] = []

    async def status(self: Any, job_id: str) -> str:
        reads.append(job_id)
        if len(reads) == 1:
            raise RayOrchClusterError("gave up after 6 tries")
        return "RUNNING"

    async def run_end(self: Any, store: Any, obs: Any) -> Any:
        await ending.wait()  # the run trigger is still ending its task
        return triggers.TriggerEvent({"status": "error"})

    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_info", status)
    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_status", status)
    monkeypatch.setattr(triggers.RayOrchJobTrigger, "_run_end", run_end)
    monkeypatch.setattr(triggers.RayOrchJobTrigger, "_unknown", run_end)

    async def scenario() -> tuple[bool, int]:
        run = triggers.RayOrchJobTrigger(
            job_id="j",
            run_id="r",
            run_store=str(tmp_path),
            poll_interval=fake.NEVER_S,
            tail_logs=False,
            end_from_trigger=True,
        )
        run_task = asyncio.create_task(fake.first_event(run))
        await fake.until(lambda: len(reads) == 1)
        (watcher,) = _run_watch.watchers().values()
        await fake.until(watcher._task.done)  # it ended on the error; the run trigger stays
        later = asyncio.create_task(fake.first_event(fake.trigger_of(tmp_path, 0)))
        await fake.until(lambda: later.done() or len(reads) == 2)
        fired = later.done()
        later.cancel()
        ending.set()
        await asyncio.gather(run_task, later, return_exceptions=True)
        return fired, len(reads)

    fired, count = asyncio.run(scenario())
    assert (fired, count) == (False, 2)


def test_a_store_that_cannot_be_opened_fails_every_trigger_clearly_and_is_tried_again(
    monkeypatch, tmp_path
) -> None:
    store, jobs = fake.CountedStore(str(tmp_path)), fake.FakeJobs()
    fake.install(monkeypatch, store, jobs)
    opens: list[str | None] = []

    async def arun_store(self: Any, uri: str | None = None) -> fake.CountedStore:
        opens.append(uri)
        if len(opens) == 1:
            raise OSError("the bucket answered 403")
        return store

    monkeypatch.setattr(triggers.RayOrchHook, "arun_store", arun_store)

    async def scenario() -> list[Any]:
        waiting = (fake.trigger_of(tmp_path, i) for i in (0, 1))
        tasks = [asyncio.create_task(fake.first_event(trigger)) for trigger in waiting]
        failed = await asyncio.gather(*tasks, return_exceptions=True)
        assert not _run_watch.watchers()
        again = asyncio.create_task(fake.first_event(fake.trigger_of(tmp_path, 2)))
        await fake.until(lambda: len(opens) == 2)
        again.cancel()
        await asyncio.gather(again, return_exceptions=True)
        return failed

    failed = asyncio.run(scenario())
    assert all(isinstance(exc, StoreError) for exc in failed), failed
    assert all(str(tmp_path) in str(exc) and "403" in str(exc) for exc in failed)
    assert jobs.closes == 2  # each watcher's hook


def test_a_job_read_failing_with_an_unexpected_error_is_told_as_the_jobs(
    monkeypatch, tmp_path
) -> None:
    """Not a store error: the triggers end on the job being unreadable, naming it."""
    store, jobs = fake.CountedStore(str(tmp_path)), fake.FakeJobs(stream=False)
    fake.install(monkeypatch, store, jobs)

    async def status(self: Any, job_id: str) -> str:
        raise ValueError("an answer that is not JSON")

    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_status", status)

    event = asyncio.run(asyncio.wait_for(fake.first_event(fake.trigger_of(tmp_path, 0)), 10))
    assert (event["status"], event["index"]) == ("error", 0)
    assert "job j" in event["message"]
    assert "not JSON" in event["message"]


def test_the_watcher_works_outside_the_first_triggers_logging_context(
    monkeypatch, tmp_path
) -> None:
    """The triggerer binds each trigger's ids to its task's context (its log lines go
    to that task's log); the watcher outlives the first trigger, so its job reads,
    its stream and its log lines carry no trigger's ids."""
    import structlog

    store, jobs = fake.CountedStore(str(tmp_path)), fake.FakeJobs()
    fake.install(monkeypatch, store, jobs)
    seen: list[dict[str, Any]] = []
    inner_logs = jobs.logs

    async def status(self: Any, job_id: str) -> str:
        seen.append(structlog.contextvars.get_contextvars())
        return "RUNNING"

    async def logs(api: Any, job_id: str) -> Any:
        seen.append(structlog.contextvars.get_contextvars())
        async for chunk in inner_logs(api, job_id):
            yield chunk

    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_status", status)
    monkeypatch.setattr(_run_watch, "astream_job_logs", logs)

    async def as_trigger(trigger_id: int, index: int) -> dict[str, Any]:
        structlog.contextvars.bind_contextvars(trigger_id=trigger_id)
        return await fake.first_event(fake.trigger_of(tmp_path, index))

    async def scenario() -> tuple[Any, Any]:
        first = fake.trigger_of(tmp_path, 0)
        tasks = [asyncio.create_task(as_trigger(1, 0)), asyncio.create_task(as_trigger(2, 1))]
        await fake.until(lambda: len(seen) == 2)
        (watcher,) = _run_watch.watchers().values()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return watcher.log, first.log

    watcher_log, trigger_log = asyncio.run(scenario())
    assert seen == [{}, {}]
    assert watcher_log is not trigger_log


def test_a_malformed_run_event_neither_breaks_the_stream_nor_hides_the_next_one(
    monkeypatch, tmp_path
) -> None:
    monkeypatch.setattr(triggers, "COMMIT_LOOK_S", fake.NEVER_S)  # only the stream wakes them
    store, jobs = fake.CountedStore(str(tmp_path)), fake.FakeJobs()
    fake.install(monkeypatch, store, jobs)

    async def scenario() -> dict[str, Any]:
        waiting = asyncio.create_task(fake.first_event(fake.trigger_of(tmp_path, 1)))
        await fake.until(lambda: jobs.streams_opened == 1)
        store.inner.commit_microbatch("r", 1, {"state": "success", "index": 1})
        jobs.say(
            'user code: RAYORCH_EVENT {"event": "microbatch", "index": "three"}\n'
            'RAYORCH_EVENT {"event": "microbatch"}\n'
            'RAYORCH_EVENT {"event": "microbatch", "index": 1}\n'
        )
        return await asyncio.wait_for(waiting, 10)

    event = asyncio.run(scenario())
    assert (event["status"], event["index"]) == ("committed", 1)
    assert jobs.streams_opened == 1


def test_a_line_that_never_ends_is_not_kept_whole_and_its_event_is_still_read() -> None:
    """A progress bar rewriting one line with carriage returns for hours: the stream's
    reader keeps a bounded part of it, and an event at its end still counts."""
    events = RunEvents()
    bar = "\rrows 12345/99999 [=====>     ] 3.2 s/it" * 32  # 1.3 KiB, no line end
    for _ in range(1000):
        assert events.feed(bar) == []
    assert events.pending <= PARTIAL_MAX
    found = events.feed("RAYORCH_EV") + events.feed('ENT {"event": "microbatch", "index": 4}\n')
    assert [event["index"] for event in found] == [4]


class _FlakyStore(fake.CountedStore):
    """A store whose first ``failures`` listings fail as a network blip does."""

    def __init__(self, root: str, failures: int) -> None:
        super().__init__(root)
        self.failures = failures

    def committed(self, run_id: str) -> frozenset[int]:
        if self.failures:
            self.failures -= 1
            raise OSError("When listing objects under key 'r/manifests': curl error 28")
        return super().committed(run_id)


def test_a_listing_that_fails_once_is_tried_again_and_fails_no_trigger(
    monkeypatch, tmp_path
) -> None:
    """A blip while listing the store (every look, for the run's whole length) is
    not the store being unreadable: the next look lists it again."""
    monkeypatch.setattr(triggers, "COMMIT_LOOK_S", 0.01)
    store, jobs = _FlakyStore(str(tmp_path), failures=2), fake.FakeJobs(stream=False)
    fake.install(monkeypatch, store, jobs)
    store.inner.commit_microbatch("r", 0, {"state": "success", "index": 0})

    event = asyncio.run(asyncio.wait_for(fake.first_event(fake.trigger_of(tmp_path, 0)), 10))
    assert (event["status"], event["index"]) == ("committed", 0)
    assert store.failures == 0


def test_listings_failing_past_the_watchers_patience_fail_every_trigger(
    monkeypatch, tmp_path
) -> None:
    monkeypatch.setattr(triggers, "COMMIT_LOOK_S", 0.01)
    monkeypatch.setattr(_run_watch, "STORE_PATIENCE_S", 0.0)
    store, jobs = _FlakyStore(str(tmp_path), failures=1000), fake.FakeJobs(stream=False)
    fake.install(monkeypatch, store, jobs)

    async def scenario() -> list[Any]:
        waiting = (fake.trigger_of(tmp_path, i) for i in (0, 1))
        tasks = [asyncio.create_task(fake.first_event(trigger)) for trigger in waiting]
        return await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10)

    failed = asyncio.run(scenario())
    assert all(isinstance(exc, StoreError) for exc in failed), failed
    assert all("curl error 28" in str(exc) for exc in failed)


def test_the_run_triggers_log_tail_keeps_a_bounded_part_of_a_line_that_never_ends() -> None:
    """The same progress bar through the log relay: a bounded part of the line is kept,
    and relayed with its end once the line ends."""
    relayed: list[str] = []

    class Log:
        def info(self, fmt: str, prefix: str, line: str) -> None:
            relayed.append(line)

        debug = info

    relay = LineRelay(Log(), "[ray job j]")
    bar = "\rrows 12345/99999 [=====>     ] 3.2 s/it" * 32
    for _ in range(1000):
        relay.feed(bar)
    assert relay.pending <= PARTIAL_MAX
    relay.feed("\rrows 99999/99999 done\n")
    (line,) = relayed
    assert line.endswith("\rrows 99999/99999 done")
    assert len(line) <= PARTIAL_MAX + len("\rrows 99999/99999 done")
    assert relay.consumed == 1000 * len(bar) + len("\rrows 99999/99999 done\n")
