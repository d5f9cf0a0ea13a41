"""Without the job's log stream, the run watcher lists the run's commits between two
job reads, so a commit ends a microbatch sensor within a look (not at the next poll),
and the run sensor reads its job often once the driver wrote the run manifest. The
mechanism is asserted by counting job reads, with a poll interval no test would wait
out."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.triggers import rayorch as triggers
from airflow_provider_rayorch.triggers.rayorch import RayOrchJobTrigger, RayOrchMicrobatchTrigger

pytestmark = pytest.mark.timeout(30)

#: a poll interval no test waits out: an event must come from the store look
LONG_POLL_S = 600.0


@pytest.fixture(autouse=True)
def quick_looks(monkeypatch) -> None:
    monkeypatch.setattr(triggers, "COMMIT_LOOK_S", 0.01)
    monkeypatch.setattr(triggers, "END_POLL_S", 0.01)


async def _first(trigger) -> dict:
    async for event in trigger.run():
        return event.payload
    raise AssertionError("no event")


def test_a_commit_ends_the_microbatch_trigger_without_another_job_read(
    monkeypatch, tmp_path
) -> None:
    reads: list[str] = []
    store = RunStore(str(tmp_path))

    async def status(self, job_id):
        reads.append(job_id)
        store.commit_microbatch("r", 1, {"state": "success"})  # commits after the look
        return "RUNNING"

    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_status", status)
    trigger = RayOrchMicrobatchTrigger(
        run_id="r", run_store=str(tmp_path), index=1, job_id="j", poll_interval=LONG_POLL_S
    )
    event = asyncio.run(asyncio.wait_for(_first(trigger), 10))
    assert (event["status"], reads) == ("committed", ["j"])


def test_the_run_trigger_reads_its_job_often_once_the_run_manifest_is_written(
    monkeypatch, tmp_path
) -> None:
    statuses = iter(["RUNNING", "RUNNING", "SUCCEEDED"])
    reads: list[str] = []
    store = RunStore(str(tmp_path))

    async def info(self, job_id):
        reads.append(job_id)
        if len(reads) == 1:  # the driver writes its run manifest, then exits
            store.write_run_manifest("r", {"run_id": "r", "state": "success"})
        return {"status": next(statuses), "message": ""}

    monkeypatch.setattr(triggers.RayOrchHook, "aget_job_info", info)
    trigger = RayOrchJobTrigger(
        job_id="j", run_id="r", run_store=str(tmp_path), poll_interval=LONG_POLL_S,
        tail_logs=False,
    )  # fmt: skip
    event = asyncio.run(asyncio.wait_for(_first(trigger), 10))
    assert (event["status"], event["job_status"], len(reads)) == ("success", "SUCCEEDED", 3)
