"""On a real loopback head, a microbatch commit and the job's end reach deferred
triggers through the job's log stream: with a poll interval and a store look longer
than the test's watchdog, no poll can be what wakes them. The run trigger relays the
same stream into its task log."""

from __future__ import annotations

import asyncio
import secrets
import sys
from typing import Any

import pytest

from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.operators.local_head import (
    RayLocalHeadStartOperator,
    RayLocalHeadStopOperator,
)
from airflow_provider_rayorch.triggers import _run_watch
from airflow_provider_rayorch.triggers import rayorch as triggers
from airflow_provider_rayorch.triggers.rayorch import RayOrchJobTrigger, RayOrchMicrobatchTrigger

#: the triggers' poll interval: longer than the watchdog
POLL_S = 60.0
#: the watchdog: an event that needed a poll would come after it
WATCHDOG_S = 45.0

#: once the test says the triggers watch, commits microbatch 0 and announces it as the
#: driver does; once the test saw it, announces the run's end and exits
JOB = """
import json, pathlib, sys, time
from airflow_provider_rayorch.runs.store import RunStore
store, start, go = RunStore(sys.argv[1]), pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
print("waiting for the triggers", flush=True)
while not start.exists():
    time.sleep(0.05)
store.commit_microbatch("r", 0, {"state": "success", "index": 0})
print("RAYORCH_EVENT " + json.dumps({"event": "microbatch", "index": 0}), flush=True)
while not go.exists():
    time.sleep(0.05)
print("RAYORCH_EVENT " + json.dumps({"event": "end", "run_id": "r"}), flush=True)
"""


async def _first(trigger: RayOrchMicrobatchTrigger | RayOrchJobTrigger) -> dict[str, Any]:
    async for event in trigger.run():
        return dict(event.payload)
    raise AssertionError("no event")


@pytest.mark.timeout(300)
def test_a_commit_and_the_jobs_end_reach_deferred_triggers_through_the_stream(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    monkeypatch.setattr(triggers, "COMMIT_LOOK_S", 600.0)  # no store listing wakes them
    script, store = tmp_path / "job.py", tmp_path / "store"
    start, go = tmp_path / "start", tmp_path / "go"
    script.write_text(JOB)
    head = RayLocalHeadStartOperator(task_id="ray_head", num_cpus=1).execute({})
    try:
        hook = RayOrchHook(address=head["address"], answered_before=True)
        job_id = hook.submit_job(
            f"{sys.executable} {script} {store} {start} {go}",
            submission_id=f"t-{secrets.token_hex(4)}",
        )

        def waiting(index: int) -> RayOrchMicrobatchTrigger:
            return RayOrchMicrobatchTrigger(
                run_id="r",
                run_store=str(store),
                index=index,
                job_id=job_id,
                address=head["address"],
                poll_interval=POLL_S,
            )

        run = RayOrchJobTrigger(
            job_id=job_id,
            run_id="r",
            run_store=str(store),
            address=head["address"],
            poll_interval=POLL_S,
        )
        relayed: list[str] = []
        monkeypatch.setattr(run.log, "info", lambda msg, *a: relayed.append(msg % a))

        async def scenario() -> tuple[dict[str, Any], dict[str, Any], int]:
            committed = asyncio.create_task(_first(waiting(0)))
            never = asyncio.create_task(_first(waiting(1)))
            ended = asyncio.create_task(_first(run))
            await asyncio.sleep(0)  # the triggers attach: the watcher lists the store once
            (watcher,) = _run_watch.watchers().values()
            await asyncio.wait_for(watcher.stream_seen.wait(), WATCHDOG_S)
            start.touch()  # the driver commits microbatch 0 and announces it
            first = await asyncio.wait_for(committed, WATCHDOG_S)
            received = watcher.received
            go.touch()  # the driver announces its end and exits
            last = await asyncio.wait_for(never, WATCHDOG_S)
            assert (await asyncio.wait_for(ended, WATCHDOG_S))["job_status"] == "SUCCEEDED"
            return first, last, received

        first, last, received = asyncio.run(scenario())
        assert (first["status"], first["index"]) == ("committed", 0)
        assert received > 0
        assert (last["status"], last["index"]) == ("error", 1)
        assert "ended SUCCEEDED" in last["message"], last
        assert relayed.count(f"[ray job {job_id}] waiting for the triggers") == 1, relayed
    finally:
        RayLocalHeadStopOperator(task_id="stop_ray_head", head=head).execute({})
