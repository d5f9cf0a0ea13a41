"""A retried microbatch task resumes a run whose Ray job died before its microbatch
committed: one new job runs the microbatches not committed yet, whichever task
notices first; the others and the run task attach to it.

A loopback HTTP server stands in for Ray's Jobs API (the real hook talks to it): it
refuses a reused submission id as Ray does, keeps a new job RUNNING until the test
finishes it, and then runs its driver in-process (real engine, local backend).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import shlex
import threading
from typing import TYPE_CHECKING, Any
from unittest import mock

import pytest
from airflow.sdk.exceptions import TaskDeferred
from repair_plans import write_flaky_plan
from submit_fakes import JsonHandler, start, stop

from airflow_provider_rayorch.exceptions import RayOrchJobFailed
from airflow_provider_rayorch.runs import driver
from airflow_provider_rayorch.runs.resumes import newest_job, read_resume, successor_id
from airflow_provider_rayorch.sensors._resume import RunResume
from airflow_provider_rayorch.sensors.rayorch import RayOrchMicrobatchSensor, RayOrchRunSensor

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from airflow_provider_rayorch.runs.store import RunStore

pytestmark = pytest.mark.timeout(60)
FIRST = "rayorch-0123-try1"
KILLED = "Job entrypoint command failed with exit code -9"


class FakeJobsApi:
    """Ray's Jobs API as the sensors use it; ``FIRST`` died (FAILED, exit code -9)."""

    def __init__(self) -> None:
        self.jobs: dict[str, dict[str, Any]] = {
            FIRST: {"submission_id": FIRST, "status": "FAILED", "message": KILLED}
        }
        self.posts: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        api = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                self.answer_get(api.jobs)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                sid = str(body["submission_id"])
                with api.lock:
                    api.posts.append(body)
                    taken = sid in api.jobs
                    if not taken:
                        api.jobs[sid] = {**body, "status": "RUNNING", "message": ""}
                if taken:  # Ray refuses to reuse a submission id
                    self.answer(400, f"Job with submission_id {sid} already exists.")
                else:
                    self.answer(200, {"submission_id": sid})

        self.server = start(Handler)
        self.address = f"http://127.0.0.1:{self.server.server_address[1]}"

    def finish(self, sid: str) -> None:
        """Run the job's driver in-process; it ends as the driver exits."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = driver.main(shlex.split(self.jobs[sid]["entrypoint"])[3:])
        self.jobs[sid]["status"] = "SUCCEEDED" if code == 0 else "FAILED"


@pytest.fixture
def jobs_api(monkeypatch) -> Iterator[FakeJobsApi]:
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    api = FakeJobsApi()
    try:
        yield api
    finally:
        stop(api.server)


@pytest.fixture
def died_run(tmp_path: Path) -> tuple[RunStore, Path]:
    """A run of 8 sources in 4 microbatches whose job died after committing 0 and 1."""
    store, state = write_flaky_plan(tmp_path, "r", sources=8, batch_size=2)
    driver.run_plan(store, "r")
    for index in (2, 3):
        store.delete(("r", "manifests", f"mb-{index:05d}.json"))
    store.clear_run_manifest("r")
    (state / "calls.log").unlink()
    return store, state


def _ctx(try_number: int, max_tries: int, map_index: int) -> dict[str, Any]:
    ti = mock.MagicMock(dag_id="d", run_id="manual__1", task_id="g.microbatch")
    ti.try_number, ti.max_tries, ti.map_index = try_number, max_tries, map_index
    return {"ti": ti}


def _sensor(api: FakeJobsApi, store: RunStore, index: int, **kw: Any) -> RayOrchMicrobatchSensor:
    kw.setdefault("deferrable", True)
    kw.setdefault("retries", 2)
    return RayOrchMicrobatchSensor(
        task_id="microbatch",
        microbatch={"index": index, "first_source": 2 * index, "count": 2},
        run_id="r",
        run_store=store.uri,
        job_id=FIRST,
        ray_address=api.address,
        poke_interval=0.01,
        **kw,
    )


def _run_sensor(api: FakeJobsApi, store: RunStore, **kw: Any) -> RayOrchRunSensor:
    return RayOrchRunSensor(
        task_id="run",
        run_id="r",
        run_store=store.uri,
        job_id=FIRST,
        ray_address=api.address,
        poke_interval=0.01,
        **kw,
    )


def _resume(api: FakeJobsApi, store: RunStore, index: int, **kw: Any) -> RunResume:
    """The resume of microbatch ``index``'s task, through its sensor's hook."""
    return RunResume(
        hook=_sensor(api, store, index).hook,
        store=store,
        run_id="r",
        first_job=FIRST,
        owner=f"task {index}",
        interval=0.01,
        log=logging.getLogger("test"),
        **kw,
    )


def _watched(sensor: RayOrchMicrobatchSensor, ctx: dict[str, Any]) -> str:
    """The job the sensor defers on."""
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(ctx)
    return str(deferred.value.trigger.job_id)


def _calls(state: Path) -> list[int]:
    log = state / "calls.log"
    return sorted(int(x) for x in log.read_text().split()) if log.exists() else []


def test_an_automatic_retry_after_the_job_died_resumes_the_run_with_one_job(
    jobs_api: FakeJobsApi, died_run: tuple[RunStore, Path]
) -> None:
    store, state = died_run
    resumed = _watched(_sensor(jobs_api, store, 2), _ctx(2, 2, map_index=2))
    assert resumed == f"{FIRST}-resume1"
    assert [p["submission_id"] for p in jobs_api.posts] == [resumed]
    entrypoint = jobs_api.posts[0]["entrypoint"]
    assert "--repair" not in entrypoint
    assert shlex.split(entrypoint)[3:] == ["--run-store", store.uri, "--run-id", "r"]
    record = read_resume(store, "r", FIRST)
    assert record is not None
    assert (record.after, record.job_id) == (FIRST, resumed)

    # the other waiting microbatch attaches to the same job: no second submit
    assert _watched(_sensor(jobs_api, store, 3), _ctx(2, 2, map_index=3)) == resumed
    assert len(jobs_api.posts) == 1

    jobs_api.finish(resumed)
    assert _calls(state) == [4, 4, 5, 5, 6, 6, 7, 7]  # committed microbatches kept
    summary = _sensor(jobs_api, store, 3).execute(_ctx(2, 2, map_index=3))
    assert summary["state"] == "success"
    assert summary["microbatch"]["index"] == 3


def test_the_run_task_waits_for_the_job_that_resumed_the_run(
    jobs_api: FakeJobsApi, died_run: tuple[RunStore, Path]
) -> None:
    store, _ = died_run
    resumed = _watched(_sensor(jobs_api, store, 2), _ctx(2, 2, map_index=2))
    run = _run_sensor(jobs_api, store, deferrable=False)
    assert run.poke(_ctx(1, 2, map_index=-1)).is_done is False  # not the dead first job
    jobs_api.finish(resumed)
    result = run.poke(_ctx(1, 2, map_index=-1))
    assert result.is_done
    assert result.xcom_value["sources"]["present"] == 8


def test_two_tasks_that_notice_at_once_submit_one_job(
    jobs_api: FakeJobsApi, died_run: tuple[RunStore, Path]
) -> None:
    """Both read the chain before either recorded the resume: they name the same
    successor and submit the same id; Ray takes it once, the second attaches."""
    store, _ = died_run
    resumes = [_resume(jobs_api, store, index) for index in (2, 3)]
    with mock.patch("airflow_provider_rayorch.sensors._resume.read_resume", return_value=None):
        jobs = [r._submit(successor_id(FIRST), after=FIRST, why="FAILED") for r in resumes]
    assert jobs == [f"{FIRST}-resume1"] * 2
    assert [p["submission_id"] for p in jobs_api.posts] == jobs  # sent twice ...
    assert [j for j in jobs_api.jobs if j != FIRST] == jobs[:1]  # ... one job


def test_the_first_try_that_finds_the_job_dead_fails_and_says_a_retry_resumes(
    jobs_api: FakeJobsApi, died_run: tuple[RunStore, Path]
) -> None:
    store, _ = died_run
    sensor = _sensor(jobs_api, store, 2, deferrable=False)
    with pytest.raises(RayOrchJobFailed) as failed:
        sensor.execute(_ctx(1, 2, map_index=2))
    message = str(failed.value)
    assert f"Ray job {FIRST} ended FAILED before microbatch 2 of run r committed" in message
    assert "an automatic retry, or a clear) resumes the run with one new job" in message
    assert jobs_api.posts == []


def test_a_manual_clear_of_a_task_whose_job_died_resumes_the_run(
    jobs_api: FakeJobsApi, died_run: tuple[RunStore, Path]
) -> None:
    store, _ = died_run
    ctx = _ctx(2, 1, map_index=2)  # the first try after a clear, retries=0
    assert _watched(_sensor(jobs_api, store, 2, retries=0), ctx) == f"{FIRST}-resume1"


def test_a_resumed_job_that_died_too_is_resumed_by_the_next_try_only(
    jobs_api: FakeJobsApi, died_run: tuple[RunStore, Path]
) -> None:
    store, state = died_run
    ctx = _ctx(2, 2, map_index=2)
    first_resume = _watched(_sensor(jobs_api, store, 2), ctx)
    jobs_api.jobs[first_resume]["status"] = "FAILED"  # killed as well
    # the same try looks again (a reschedule): it resumed once, so it fails now
    with pytest.raises(RayOrchJobFailed, match=f"Ray job {first_resume} ended FAILED"):
        _sensor(jobs_api, store, 2, deferrable=False).execute(ctx)
    assert len(jobs_api.posts) == 1
    second = _watched(_sensor(jobs_api, store, 2), _ctx(3, 2, map_index=2))
    assert second == f"{FIRST}-resume2"
    assert newest_job(store, "r", FIRST) == second
    jobs_api.finish(second)
    assert _calls(state) == [4, 4, 5, 5, 6, 6, 7, 7]


def test_a_recorded_resume_unknown_to_ray_is_submitted_under_its_own_id(
    jobs_api: FakeJobsApi, died_run: tuple[RunStore, Path]
) -> None:
    """Its recorder died before submitting it (or the head that ran it is gone)."""
    from airflow_provider_rayorch.runs.resumes import record_resume

    store, _ = died_run
    record_resume(store, "r", FIRST, owner="a killed task")
    assert _watched(_sensor(jobs_api, store, 2), _ctx(2, 2, map_index=2)) == f"{FIRST}-resume1"
    assert [p["submission_id"] for p in jobs_api.posts] == [f"{FIRST}-resume1"]


def test_sensors_log_the_jobs_api_they_use_without_a_connection(
    jobs_api: FakeJobsApi, died_run: tuple[RunStore, Path], monkeypatch
) -> None:
    from airflow_provider_rayorch.hooks.rayorch import RayOrchHook

    store, _ = died_run
    jobs_api.jobs[FIRST]["status"] = "RUNNING"
    hook_log = mock.MagicMock()
    monkeypatch.setattr(RayOrchHook, "log", property(lambda _: hook_log))
    _watched(_sensor(jobs_api, store, 2), _ctx(1, 2, map_index=2))
    lines = [c.args[0] % c.args[1:] for c in hook_log.info.call_args_list]
    assert not [line for line in lines if "embedded" in line], lines
    assert [line for line in lines if f"using the Ray Jobs API at {jobs_api.address}" in line]


def test_the_run_task_names_the_task_to_clear_when_the_job_died(
    jobs_api: FakeJobsApi, died_run: tuple[RunStore, Path]
) -> None:
    store, _ = died_run
    run = _run_sensor(jobs_api, store, deferrable=False, submit_task_id="docs.submit")
    with pytest.raises(RayOrchJobFailed) as failed:
        run.poke(_ctx(1, 2, map_index=-1))
    message = str(failed.value)
    assert KILLED in message
    assert "then clear task docs.submit with Downstream" in message
    assert "resumes the run" in message


def test_the_run_task_ending_in_the_triggerer_names_the_task_to_clear(
    jobs_api: FakeJobsApi, died_run: tuple[RunStore, Path], monkeypatch
) -> None:
    import asyncio

    from airflow.triggers.base import TaskFailedEvent

    store, _ = died_run
    jobs_api.jobs[FIRST]["status"] = "RUNNING"
    run = _run_sensor(
        jobs_api, store, deferrable=True, end_from_trigger=True, submit_task_id="docs.submit"
    )
    with pytest.raises(TaskDeferred) as deferred:
        run.execute(_ctx(1, 2, map_index=-1))
    trigger = deferred.value.trigger
    assert trigger.serialize()[1]["to_clear"].startswith("task docs.submit with Downstream")
    jobs_api.jobs[FIRST]["status"] = "FAILED"
    errors: list[str] = []
    monkeypatch.setattr(trigger.log, "error", lambda msg, *a: errors.append(msg % a))

    async def end() -> Any:
        async for event in trigger.run():
            return event
        return None

    assert isinstance(asyncio.run(end()), TaskFailedEvent)
    [error] = errors
    assert KILLED in error
    assert "then clear task docs.submit with Downstream" in error


def test_a_microbatch_committed_just_before_the_job_ended_starts_no_job(
    jobs_api: FakeJobsApi, died_run: tuple[RunStore, Path]
) -> None:
    """The manifest shows up between the task's first look and the job read."""
    store, _ = died_run
    resume = _resume(jobs_api, store, 2, needed=lambda: False)
    assert resume.job_to_watch() == FIRST
    assert jobs_api.posts == []
