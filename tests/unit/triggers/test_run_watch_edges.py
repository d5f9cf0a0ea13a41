"""Edges of the run watcher: triggers joining with different poll intervals, a
watcher that ended or could not open its store leaving the registry, a job read that
fails oddly, the watcher's logging context, and malformed run events. Counted
against a local store and a fake Jobs API; no test waits out a poll interval."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from airflow_provider_rayorch.triggers import rayorch as triggers
from airflow_provider_rayorch.triggers.rayorch import RayOrchMicrobatchTrigger
from tests.unit.triggers.run_watch_fakes import CountedStore, FakeJobs, first_event, install

pytestmark = pytest.mark.timeout(60)

#: a poll interval or look no test waits out
NEVER_S = 600.0


def _microbatch(tmp_path, index: int, poll_interval: float = NEVER_S) -> RayOrchMicrobatchTrigger:
    return RayOrchMicrobatchTrigger(
        run_id="r", run_store=str(tmp_path), index=index, job_id="j", poll_interval=poll_interval
    )


async def _until(check: Any) -> None:
    """Yield to the loop until ``check()`` (the test's watchdog bounds it)."""
    while True:
        if check():
            return
        await asyncio.sleep(0)


def test_a_trigger_with_a_shorter_poll_interval_shortens_the_watchers_pause(
    monkeypatch, tmp_path
) -> None:
    """The first trigger polls every 600 s; one joining with 0.01 s sees the job's
    end at its own cadence, not after the first one's pause."""
    monkeypatch.setattr(triggers, "COMMIT_LOOK_S", NEVER_S)
    store, jobs = CountedStore(str(tmp_path)), FakeJobs(stream=False)
    install(monkeypatch, store, jobs)

    async def why(self, hook, store) -> str:
        return "the driver's cause"

    monkeypatch.setattr(RayOrchMicrobatchTrigger, "_why_ended", why)

    async def scenario() -> dict[str, Any]:
        slow = asyncio.create_task(first_event(_microbatch(tmp_path, 0)))
        await _until(lambda: jobs.job_reads == 1)  # the watcher's first read, then 600 s
        jobs.status = "FAILED"
        fast = asyncio.create_task(first_event(_microbatch(tmp_path, 1, 0.01)))
        event = await asyncio.wait_for(fast, 10)
        await asyncio.wait_for(slow, 10)  # the end wakes every waiter
        return event

    event = asyncio.run(scenario())
    assert (event["status"], event["index"]) == ("error", 1)
    assert "ended FAILED" in event["message"]
