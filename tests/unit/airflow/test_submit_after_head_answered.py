"""The group's submit retries a refused connection to the head its ray_head task
verified (clean-clone CI, test_microbatch_sensors_defer_to_the_real_triggerer).

Under load a loopback head took 51 s to start; 7 s after ``ray_head`` reported its
Jobs API and job agent up, the group's ``submit`` made its first request and got
"connection refused", which the first-contact rule (a Jobs API that never answered
this hook is a wrong address) failed at once. The head did answer, in ``ray_head``:
the group's submit says so (``answered_before``), so a refused connection is retried
within the one retry budget. A plain submit keeps the first-contact rule.

The Jobs API here is a loopback server bound to its port but not listening (every
connection is refused) until the submit's second retry wait, when it starts to
listen: the retry waits are injected, nothing sleeps.
"""

from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
from airflow.sdk import DAG
from submit_fakes import JsonHandler

from airflow_provider_rayorch.exceptions import RayOrchClusterError
from airflow_provider_rayorch.hooks import jobs_api as jobs_api_module
from airflow_provider_rayorch.operators.local_head import RayLocalHeadStartOperator
from airflow_provider_rayorch.operators.microbatch import (
    RayOrchSubmitOperator,
    rayorch_microbatch_group,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)

SOURCES = list(range(4))


class LateJobsApi:
    """Ray's Jobs API routes a submit uses, refusing every connection until
    :meth:`listen` (its port is bound from the start, so nothing else takes it)."""

    def __init__(self) -> None:
        self.posts: list[str] = []
        api = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                path = self.path.rstrip("/")
                if not self.answer_listing(path, []):
                    self.answer(404, f"Job {path} does not exist")

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.posts.append(str(body["submission_id"]))
                self.answer(200, {"submission_id": body["submission_id"], "job_id": None})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
        self.server.daemon_threads = True
        self.server.server_bind()  # bound, not listening: a connection is refused
        self.address = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread: threading.Thread | None = None

    def listen(self) -> None:
        self.server.server_activate()
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        if self.thread is not None:
            self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def jobs_api(tmp_path: Path, monkeypatch) -> Iterator[LateJobsApi]:
    conn = {"conn_type": "rayorch", "extra": {"run_store": str(tmp_path)}}  # no host
    monkeypatch.setenv("AIRFLOW_CONN_RAYORCH_DEFAULT", json.dumps(conn))
    api = LateJobsApi()
    try:
        yield api
    finally:
        api.close()


@pytest.fixture
def waits(monkeypatch, jobs_api: LateJobsApi) -> list[float]:
    """The submit's retry waits; the Jobs API starts to listen at the second one."""
    seen: list[float] = []

    def wait(seconds: float) -> None:
        seen.append(seconds)
        if len(seen) == 2:
            jobs_api.listen()

    monkeypatch.setattr(jobs_api_module, "sleep", wait)  # the hook's request path
    return seen


class _Ti:
    """The task-instance fields a submit reads; ``xcom_pull`` gives the ray_head's info."""

    dag_id, run_id, task_id, map_index, try_number = "dag", "manual__1", "mb.submit", -1, 1

    def __init__(self, head_address: str) -> None:
        self.head_address = head_address

    def xcom_pull(self, task_ids: str) -> dict[str, Any]:
        assert task_ids == "mb.ray_head"
        return {"address": self.head_address}

    def xcom_push(self, key: str, value: Any) -> None:
        pass


def _context(head_address: str) -> dict[str, Any]:
    return {"ti": _Ti(head_address), "task_state_store": None}


def _group_dag(*, local_head: bool, ray_address: str | None = None) -> DAG:
    with DAG("submit_after_head_answered", schedule=None) as dag:
        rayorch_microbatch_group(
            "mb",
            pipeline="fake_pipelines:Square",
            sources=SOURCES,
            input_batch_size=2,
            local_head=local_head,
            ray_address=ray_address,
        )
    return dag


def test_the_groups_submit_retries_a_refused_head_its_ray_head_saw_answer(
    jobs_api: LateJobsApi, waits: list[float]
) -> None:
    submit = _group_dag(local_head=True).get_task("mb.submit")
    ctx = _context(jobs_api.address)
    submit.render_template_fields(ctx)  # ray_address from the ray_head task's XCom
    assert submit.ray_address == jobs_api.address
    descriptors = submit.execute(ctx)
    assert [d["count"] for d in descriptors] == [2, 2]
    assert len(waits) == 2  # two refused connections, retried within the budget
    assert len(jobs_api.posts) == 1  # then one job


def test_a_plain_submit_to_an_address_that_never_answered_fails_at_once(
    jobs_api: LateJobsApi, waits: list[float]
) -> None:
    submit = RayOrchSubmitOperator(
        task_id="submit",
        pipeline="fake_pipelines:Square",
        sources=SOURCES,
        ray_address=jobs_api.address,
    )
    with pytest.raises(RayOrchClusterError) as caught:
        submit.execute(_context(jobs_api.address))
    assert waits == []  # not one retry: a wrong address gets its hint now
    assert caught.value.transient is False
    assert "it has never answered, so this is not retried" in str(caught.value)
    assert jobs_api.posts == []


def test_the_group_tells_its_submit_that_the_head_answered() -> None:
    dag = _group_dag(local_head=True)
    assert isinstance(dag.get_task("mb.ray_head"), RayLocalHeadStartOperator)
    submit = dag.get_task("mb.submit")
    assert isinstance(submit, RayOrchSubmitOperator)
    assert submit.answered_before is True
    assert "mb.ray_head" in submit.upstream_task_ids  # the head is verified before the submit


def test_without_a_local_head_the_groups_submit_keeps_the_first_contact_rule() -> None:
    submit = _group_dag(local_head=False, ray_address="http://head:8265").get_task("mb.submit")
    assert submit.answered_before is False
    assert RayOrchSubmitOperator(task_id="s", pipeline="m:f", sources=[]).answered_before is False
