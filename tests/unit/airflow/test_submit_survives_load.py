"""The first submit survives a loaded head.

A loopback HTTP server stands in for Ray's Jobs API and answers the first
``POST /api/jobs/`` the way a busy head does: it drops the connection, stalls past
the client's timeout (having accepted the job, or not), or answers Ray's own HTTP
500 "No available agent to submit job". The submission id is deterministic, so
the operator asks ``GET /api/jobs/<id>`` and attaches to a job that exists, or
submits again, within the one retry budget. Every case ends with exactly one job
and the task's summary. The "cluster" runs the driver in-process on the fake engine.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any
from unittest import mock

import pytest
from submit_fakes import JsonHandler, start, stop

from airflow_provider_rayorch.exceptions import RayOrchClusterError
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator
from airflow_provider_rayorch.runs import driver
from airflow_provider_rayorch.runs.store import RunStore

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)

NO_AGENT = "No available agent to submit job, please try again later."
#: The hook's timeout in these tests: a stall is a wait on an event nobody sets in
#: time, so the client always times out first, whatever the machine's load.
TIMEOUT_S = 0.5


def _duplicate_answer(sid: str) -> str:
    """What Ray's job head answers a reused submission id: HTTP 500 with a traceback
    wrapping its agent's HTTP 400 (the reason is on the last lines)."""
    frames = "".join(
        f'  File "/ray/dashboard/modules/job/job_head.py", line {n}, in submit_job\n'
        "    resp = await job_agent_client.submit_job_internal(submit_request)\n"
        for n in range(400, 420)
    )
    return (
        f"Traceback (most recent call last):\n{frames}RuntimeError: Request failed with "
        f"status code 400: Traceback (most recent call last):\n{frames}ValueError: Job with "
        f"submission_id {sid} already exists. Please use a different submission_id.\n."
    )


class FakeJobsApi:
    """Ray's Jobs API routes the operator uses; ``first_post`` says how the first
    ``POST /api/jobs/`` goes wrong."""

    def __init__(self, store: str, first_post: str) -> None:
        self.store = store
        self.first_post = first_post
        self.jobs: dict[str, dict[str, Any]] = {}
        self.posts = 0
        self.gets_failed = False
        self.release = threading.Event()  # ends a stall (at teardown)
        self.lock = threading.Lock()
        api = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                path = self.path.rstrip("/")
                if self.answer_listing_or_logs(path, list(api.jobs.values())):
                    return
                if api.first_post == "accepted-then-disconnect" and not api.gets_failed:
                    api.gets_failed = True  # the check after the dropped POST fails too
                    self.answer(503, "upstream connect error")
                else:
                    self.answer_job(path, api.jobs)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with api.lock:
                    api.posts += 1
                    first = api.posts == 1
                verdict = api.first_post if first else "ok"
                if verdict == "disconnect":
                    self.close_connection = True
                    self.connection.shutdown(2)  # no answer at all
                    return
                if verdict == "500":
                    self.answer(500, NO_AGENT)
                    return
                if verdict == "stall-not-accepted":
                    api.release.wait(30)
                    self.answer(500, NO_AGENT)
                    return
                sid = str(body["submission_id"])
                if sid in api.jobs:  # Ray refuses to reuse a submission id
                    self.answer(500, _duplicate_answer(sid))
                    return
                api.accept(sid, body)
                if verdict == "stall-accepted":
                    api.release.wait(30)
                if verdict == "accepted-then-disconnect":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.answer(200, {"submission_id": sid, "job_id": None})

        self.server = start(Handler)
        self.address = f"http://127.0.0.1:{self.server.server_address[1]}"

    def accept(self, sid: str, body: dict[str, Any]) -> None:
        """Run the job: the driver in-process against the run store, then SUCCEEDED."""
        run_id = str(body["metadata"]["rayorch_run_id"])
        driver.run_plan(RunStore(self.store), run_id)
        self.jobs[sid] = {
            "submission_id": sid,
            "status": "SUCCEEDED",
            "message": "",
            "metadata": body["metadata"],
        }

    def close(self) -> None:
        self.release.set()
        stop(self.server)


def _context() -> dict[str, Any]:
    ti = mock.MagicMock(
        dag_id="dag", run_id="manual__1", task_id="task", map_index=-1, try_number=1
    )
    ti.xcom_push.side_effect = lambda key, value: None
    return {"ti": ti, "task_state_store": None, "outlet_events": mock.MagicMock()}


@pytest.fixture
def jobs_api(request, tmp_path: Path, monkeypatch) -> Iterator[FakeJobsApi]:
    api = FakeJobsApi(str(tmp_path), request.param)
    conn = {
        "conn_type": "rayorch",
        "host": api.address,
        "extra": {"timeout": TIMEOUT_S, "run_store": str(tmp_path)},
    }
    monkeypatch.setenv("AIRFLOW_CONN_RAYORCH_DEFAULT", json.dumps(conn))
    try:
        yield api
    finally:
        api.close()


CASES = [
    pytest.param("disconnect", id="disconnect"),
    pytest.param("stall-accepted", id="stall-past-timeout-job-accepted"),
    pytest.param("stall-not-accepted", id="stall-past-timeout-no-agent"),
    pytest.param("500", id="http-500-no-available-agent"),
    pytest.param("accepted-then-disconnect", id="taken-answer-lost-check-failed-resubmitted"),
]


@pytest.mark.parametrize("jobs_api", CASES, indirect=True)
def test_the_first_submit_survives_a_busy_head(jobs_api: FakeJobsApi, fake_engine) -> None:
    op = RayOrchOperator(
        task_id="task", pipeline="fake_pipelines:Square", sources=list(range(5)), poll_interval=0
    )
    ctx = _context()
    summary = op.execute(ctx)
    assert summary["state"] == "success"
    assert summary["sources"]["present"] == 5
    assert len(jobs_api.jobs) == 1  # exactly one job, whatever the first POST did
    assert op._job_id in jobs_api.jobs


@pytest.mark.parametrize("jobs_api", [pytest.param("500", id="500")], indirect=True)
def test_an_error_answer_is_not_called_unreachable(jobs_api: FakeJobsApi) -> None:
    """The API answered: the message says so, with the status and Ray's words."""
    hook = RayOrchHook()
    with pytest.raises(RayOrchClusterError) as caught:  # one try: the mapped error
        hook.api.send("POST", "/api/jobs/", what="submitting job 'x'", json={})
    message = str(caught.value)
    assert "cannot reach" not in message
    assert "answered HTTP 500" in message
    assert NO_AGENT in message
    assert caught.value.status == 500
    assert caught.value.transient  # Ray says "try again later"


@pytest.mark.parametrize("jobs_api", [pytest.param("ok", id="ok")], indirect=True)
def test_an_error_traceback_is_excerpted_by_its_last_lines(jobs_api: FakeJobsApi) -> None:
    hook = RayOrchHook()
    body = {"submission_id": "s1", "metadata": {"rayorch_run_id": "r"}, "entrypoint": "x"}
    jobs_api.jobs["s1"] = {"submission_id": "s1", "status": "RUNNING"}
    with pytest.raises(RayOrchClusterError) as caught:
        hook.api.request("POST", "/api/jobs/", what="submitting job 's1'", json=body)
    message = str(caught.value)
    assert "submission_id s1 already exists" in message
    assert len(message) < 800


@pytest.mark.parametrize("jobs_api", [pytest.param("disconnect", id="disc")], indirect=True)
def test_a_dropped_connection_says_no_answer(jobs_api: FakeJobsApi) -> None:
    hook = RayOrchHook()
    assert hook.check_reachable() == "2.60.0"
    with pytest.raises(RayOrchClusterError) as caught:  # one try: the mapped error
        hook.api.send("POST", "/api/jobs/", what="submitting job 'x'", json={})
    message = str(caught.value)
    assert "no answer" in message
    assert caught.value.status is None
    assert caught.value.transient
