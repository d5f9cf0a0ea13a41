"""The triggers of one run share one run watcher: store reads and job reads do not
grow with the number of waiting triggers, an announced commit wakes only its
trigger, the stream's loss falls back to listing the store, and the last trigger to
leave stops the watcher. Counted against a local store and a fake Jobs API; poll
intervals no test waits out unless the test is about the poll."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from airflow_provider_rayorch.triggers import _run_watch
from airflow_provider_rayorch.triggers import rayorch as triggers
from airflow_provider_rayorch.triggers.rayorch import RayOrchJobTrigger, RayOrchMicrobatchTrigger
from tests.unit.triggers.run_watch_fakes import (
    NEVER_S,
    CountedStore,
    FakeJobs,
    first_event,
    install,
    trigger_of,
)

pytestmark = pytest.mark.timeout(60)


def _commit(store: CountedStore, index: int) -> None:
    store.inner.commit_microbatch("r", index, {"state": "success", "index": index})


async def _streaming() -> _run_watch.RunWatcher:
    """The one run watcher, once its stream brought a chunk (yields to the loop until
    then; the test's watchdog bounds it)."""
    while True:
        found = list(_run_watch.watchers().values())
        if found and found[0].streaming:
            (watcher,) = found
            return watcher
        await asyncio.sleep(0)


async def _run_and_microbatches(tmp_path, count: int) -> list[asyncio.Task[dict[str, Any]]]:
    """``count`` waiting microbatch triggers and the run's trigger (last), once the
    stream brought its first line."""
    run = RayOrchJobTrigger(
        job_id="j", run_id="r", run_store=str(tmp_path), poll_interval=NEVER_S, tail_logs=False
    )
    tasks = [asyncio.create_task(first_event(trigger_of(tmp_path, i))) for i in range(count)]
    tasks.append(asyncio.create_task(first_event(run)))
    await _streaming()
    return tasks


async def _cancel(tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _reads_per_look(monkeypatch, tmp_path, n: int) -> tuple[int, int]:
    """Store reads and job reads of ``n`` waiting triggers of one run over the
    watcher's first 30 looks (no stream: the store is listed at every look)."""
    monkeypatch.setattr(triggers, "COMMIT_LOOK_S", 0.01)
    store, jobs = CountedStore(str(tmp_path / f"n{n}")), FakeJobs(stream=False)
    install(monkeypatch, store, jobs)

    async def scenario() -> tuple[int, int]:
        counted = store.at_listing(30)
        waiting = [
            asyncio.create_task(first_event(trigger_of(tmp_path / f"n{n}", i, 0.01)))
            for i in range(n)
        ]
        counts = await counted
        assert not any(task.done() for task in waiting)
        await _cancel(waiting)
        return counts

    return asyncio.run(scenario())


def test_a_thousand_waiting_triggers_read_the_store_and_the_job_as_often_as_ten(
    monkeypatch, tmp_path
) -> None:
    """The watcher's cadence is set by the look and the poll interval alone, so reads
    per look are reads per second: a thousand triggers within 1.2x of ten."""
    store_10, jobs_10 = _reads_per_look(monkeypatch, tmp_path, 10)
    store_1000, jobs_1000 = _reads_per_look(monkeypatch, tmp_path, 1000)
    assert store_1000 <= 1.2 * store_10, (store_10, store_1000)
    assert jobs_1000 <= 1.2 * jobs_10, (jobs_10, jobs_1000)
    # about one of each per look: far from one per trigger (300 with ten), with room
    # for the job's poll and the look, two timers, to drift apart on a busy machine
    assert store_10 < 60
    assert jobs_10 < 60


def test_an_announced_commit_wakes_only_its_trigger_which_reads_its_manifest_once(
    monkeypatch, tmp_path
) -> None:
    monkeypatch.setattr(triggers, "COMMIT_LOOK_S", NEVER_S)
    store, jobs = CountedStore(str(tmp_path)), FakeJobs()
    install(monkeypatch, store, jobs)

    async def scenario() -> dict[str, Any]:
        jobs.say("the driver starts\n")
        listed = store.at_listing(1)  # the watcher's first look, before the commit
        waiting = {i: asyncio.create_task(first_event(trigger_of(tmp_path, i))) for i in range(5)}
        await listed
        await _streaming()
        _commit(store, 2)
        jobs.announce("microbatch", index=2, state="success")
        event = await asyncio.wait_for(waiting.pop(2), 10)
        assert not any(task.done() for task in waiting.values())
        await _cancel(list(waiting.values()))
        return event

    event = asyncio.run(scenario())
    assert (event["status"], event["index"]) == ("committed", 2)
    assert store.manifest_reads == [2]
    assert (store.reads["committed"], jobs.job_reads, jobs.streams_opened) == (1, 1, 1)


def test_the_job_trigger_and_the_trigger_ofs_share_one_watcher(monkeypatch, tmp_path) -> None:
    store, jobs = CountedStore(str(tmp_path)), FakeJobs()
    install(monkeypatch, store, jobs)

    async def scenario() -> list[dict[str, Any]]:
        jobs.say("started\n")
        tasks = await _run_and_microbatches(tmp_path, 3)
        for i in range(3):
            _commit(store, i)
            jobs.announce("microbatch", index=i)
        store.inner.write_run_manifest("r", {"run_id": "r", "state": "success"})
        jobs.announce("end", run_id="r")
        assert len(_run_watch.watchers()) == 1
        jobs.status = "SUCCEEDED"  # read at the fast cadence once the driver said so
        return await asyncio.wait_for(asyncio.gather(*tasks), 10)

    events = asyncio.run(scenario())
    assert [e["status"] for e in events] == ["committed"] * 3 + ["success"]
    assert (jobs.streams_opened, jobs.closes) == (1, 1)


def test_the_streams_loss_falls_back_to_listing_and_every_trigger_still_ends(
    monkeypatch, tmp_path
) -> None:
    monkeypatch.setattr(triggers, "COMMIT_LOOK_S", 0.01)
    monkeypatch.setattr(triggers, "END_POLL_S", 0.01)
    store, jobs = CountedStore(str(tmp_path)), FakeJobs()
    install(monkeypatch, store, jobs)

    async def scenario() -> list[dict[str, Any]]:
        jobs.say("started\n")
        tasks = await _run_and_microbatches(tmp_path, 2)
        for i in range(2):  # committed, never announced
            _commit(store, i)
        jobs.break_stream()
        committed = await asyncio.wait_for(asyncio.gather(*tasks[:2]), 10)  # by a listing
        store.inner.write_run_manifest("r", {"run_id": "r", "state": "success"})
        jobs.status = "SUCCEEDED"  # read fast once a listing saw the run manifest
        return [*committed, await asyncio.wait_for(tasks[2], 10)]

    events = asyncio.run(scenario())
    assert [e["status"] for e in events] == ["committed", "committed", "success"]
    assert jobs.job_reads >= 2  # the first, and the fast ones after the run manifest


def test_a_broken_stream_is_opened_again_and_what_came_already_is_skipped(
    monkeypatch, tmp_path
) -> None:
    monkeypatch.setattr(triggers, "COMMIT_LOOK_S", NEVER_S)  # only the stream wakes them
    store, jobs = CountedStore(str(tmp_path)), FakeJobs()
    install(monkeypatch, store, jobs)

    async def scenario() -> list[dict[str, Any]]:
        tasks = [asyncio.create_task(first_event(trigger_of(tmp_path, i, 0.05))) for i in (0, 1)]
        jobs.say("started\n")
        watcher = await _streaming()
        _commit(store, 0)
        jobs.announce("microbatch", index=0)
        first = await asyncio.wait_for(tasks[0], 10)
        jobs.break_stream()
        _commit(store, 1)
        jobs.announce("microbatch", index=1)  # on the reopened stream, after the replay
        second = await asyncio.wait_for(tasks[1], 10)
        assert watcher.received == len(jobs.log)  # each character once
        return [first, second]

    events = asyncio.run(scenario())
    assert [(e["status"], e["index"]) for e in events] == [("committed", 0), ("committed", 1)]
    assert jobs.streams_opened == 2
    assert store.manifest_reads == [0, 1]


def test_what_an_earlier_job_committed_is_seen_though_the_stream_never_announces_it(
    monkeypatch, tmp_path
) -> None:
    """A resumed run's driver skips what is committed: the watcher's first listing
    finds it, and a trigger attaching later is woken at once."""
    monkeypatch.setattr(triggers, "COMMIT_LOOK_S", NEVER_S)
    store, jobs = CountedStore(str(tmp_path)), FakeJobs()
    install(monkeypatch, store, jobs)
    _commit(store, 0)

    async def scenario() -> list[dict[str, Any]]:
        jobs.say("resuming\n")
        waiting = asyncio.create_task(first_event(trigger_of(tmp_path, 1)))
        await _streaming()
        early = await asyncio.wait_for(first_event(trigger_of(tmp_path, 0)), 10)
        await _cancel([waiting])
        return [early]

    [event] = asyncio.run(scenario())
    assert (event["status"], event["index"]) == ("committed", 0)
    assert store.reads["committed"] == 1


def test_a_job_that_ends_wakes_every_waiting_microbatch_trigger(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(triggers, "COMMIT_LOOK_S", NEVER_S)
    store, jobs = CountedStore(str(tmp_path)), FakeJobs()
    install(monkeypatch, store, jobs)

    async def why(self, hook, store) -> str:
        return "the driver's cause"

    monkeypatch.setattr(RayOrchMicrobatchTrigger, "_why_ended", why)

    async def scenario() -> list[dict[str, Any]]:
        jobs.say("started\n")
        tasks = [asyncio.create_task(first_event(trigger_of(tmp_path, i))) for i in range(3)]
        await _streaming()
        jobs.status = "FAILED"
        jobs.queue.put_nowait(None)  # Ray closes the stream once the job ended
        return await asyncio.wait_for(asyncio.gather(*tasks), 10)

    events = asyncio.run(scenario())
    assert [e["status"] for e in events] == ["error"] * 3
    assert all("ended FAILED" in e["message"] for e in events)
    assert sorted(store.manifest_reads) == [0, 1, 2]


def test_a_cancelled_trigger_detaches_and_the_last_one_stops_the_watcher(
    monkeypatch, tmp_path
) -> None:
    store, jobs = CountedStore(str(tmp_path)), FakeJobs()
    install(monkeypatch, store, jobs)

    async def scenario() -> None:
        tasks = [asyncio.create_task(first_event(trigger_of(tmp_path, i))) for i in range(3)]
        jobs.say("started\n")
        watcher = await asyncio.wait_for(_streaming(), 10)
        await _cancel(tasks[:1])
        assert len(watcher.waiters) == 2
        assert _run_watch.watchers()
        await _cancel(tasks[1:])
        assert not _run_watch.watchers()
        assert watcher.waiters == set()
        assert asyncio.all_tasks() == {asyncio.current_task()}, "a task was left running"

    asyncio.run(scenario())
    assert jobs.closes == 1
