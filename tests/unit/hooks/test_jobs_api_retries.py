"""The Jobs API's request path retries transient errors within its one budget, the
same way sync and async; permanent errors fail at the first try."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from airflow_provider_rayorch.common.polling import RetryPolicy
from airflow_provider_rayorch.exceptions import (
    RayOrchAuthError,
    RayOrchClusterError,
    RayOrchTransientError,
)
from airflow_provider_rayorch.hooks import jobs_api
from airflow_provider_rayorch.hooks.jobs_api import Contact, JobsApi

if TYPE_CHECKING:
    from collections.abc import Callable

pytestmark = pytest.mark.timeout(30)

ADDRESS = "http://head:8265"
PATH = "/api/jobs/j"


class _Answers:
    """A MockTransport handler giving ``answers`` in turn (then the last one again);
    an exception instance is raised as the transport's error."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        code, body = answer
        return (
            httpx.Response(code, json=body)
            if not isinstance(body, str)
            else httpx.Response(code, text=body)
        )


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """The waits between tries, sync and async (nothing sleeps)."""
    seen: list[float] = []

    async def asleep(delay: float) -> None:
        seen.append(delay)

    monkeypatch.setattr(jobs_api, "sleep", seen.append)
    monkeypatch.setattr(jobs_api, "asleep", asleep)
    return seen


def _api(monkeypatch, answers: _Answers, *, answered: bool = True, **kw: Any) -> JobsApi:
    transport = httpx.MockTransport(answers)
    made = JobsApi._client_kwargs
    monkeypatch.setattr(
        JobsApi,
        "_client_kwargs",
        lambda self, verify: {**made(self, verify), "transport": transport},
    )
    return JobsApi(ADDRESS, "rayorch_default", contact=Contact(answered=answered), **kw)


def _sync(api: JobsApi, path: str = PATH) -> Any:
    return api.json("GET", path, what="reading job 'j'")


def _async(api: JobsApi, path: str = PATH) -> Any:
    return asyncio.run(api.ajson("GET", path, what="reading job 'j'"))


PATHS: dict[str, Callable[..., Any]] = {"sync": _sync, "async": _async}
both = pytest.mark.parametrize("call", list(PATHS.values()), ids=list(PATHS))


@both
@pytest.mark.parametrize(
    "transient",
    [
        (503, "restarting"),
        (502, "bad gateway"),
        (429, "slow down"),
        (500, "No available agent to submit job, please try again later."),
        httpx.ReadTimeout("timed out"),
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        httpx.ConnectError("[Errno 111] Connection refused"),
    ],
    ids=["503", "502", "429", "500-try-later", "read-timeout", "reset", "refused"],
)
def test_a_transient_error_is_retried_within_the_budget_then_succeeds(
    monkeypatch, waits, call, transient
) -> None:
    answers = _Answers(transient, transient, (200, {"status": "RUNNING"}))
    api = _api(monkeypatch, answers, retry=RetryPolicy(base_s=2.0))
    assert call(api) == {"status": "RUNNING"}
    assert len(answers.requests) == 3
    assert waits == [2.0, 4.0]


@both
@pytest.mark.parametrize("code", [400, 401, 403, 404, 500])
def test_a_permanent_error_is_not_retried(monkeypatch, waits, call, code) -> None:
    answers = _Answers((code, "refused for good"), (200, {"status": "RUNNING"}))
    api = _api(monkeypatch, answers)
    error = RayOrchAuthError if code in (401, 403) else RayOrchClusterError
    with pytest.raises(error, match=f"answered HTTP {code}") as caught:
        call(api)
    assert not isinstance(caught.value, RayOrchTransientError)
    assert len(answers.requests) == 1
    assert waits == []


@both
@pytest.mark.parametrize("path", ["/api/jobs/", "/api/version"])
def test_a_refused_first_contact_is_not_retried(monkeypatch, waits, call, path) -> None:
    """A request that names no job: a wrong address fails at once with the hint."""
    answers = _Answers(httpx.ConnectError("[Errno 111] Connection refused"))
    api = _api(monkeypatch, answers, answered=False)
    with pytest.raises(RayOrchClusterError, match="it has never answered, so this is not retried"):
        call(api, path)
    assert len(answers.requests) == 1
    assert waits == []


@both
@pytest.mark.parametrize("path", ["/api/jobs/j", "/api/jobs/j/logs", "/api/jobs/j/stop"])
def test_a_refused_first_contact_about_a_job_is_retried(monkeypatch, waits, call, path) -> None:
    """A job's id says the Jobs API answered its submit: refused is a restart, retried."""
    refused = httpx.ConnectError("[Errno 111] Connection refused")
    answers = _Answers(refused, (200, {"status": "RUNNING"}))
    api = _api(monkeypatch, answers, answered=False, retry=RetryPolicy(base_s=2.0))
    assert call(api, path) == {"status": "RUNNING"}
    assert len(answers.requests) == 2
    assert waits == [2.0]


@both
def test_the_spent_budget_raises_a_permanent_error_naming_the_call_and_address(
    monkeypatch, waits, call
) -> None:
    answers = _Answers((504, "gateway timeout"))
    api = _api(monkeypatch, answers, retry=RetryPolicy(retries=3, base_s=1.0, max_delay_s=3.0))
    with pytest.raises(RayOrchClusterError) as caught:
        call(api)
    message = str(caught.value)
    assert message.startswith("reading job 'j': gave up after 4 tries")
    assert f"the Ray Jobs API at {ADDRESS} answered HTTP 504" in message
    assert "retry budget: 3 retries waiting 1, 2, 3 s" in message
    assert caught.value.transient is False
    assert isinstance(caught.value.__cause__, RayOrchTransientError)
    assert len(answers.requests) == 4
    assert waits == [1.0, 2.0, 3.0]


@both
def test_no_retry_budget_means_one_try(monkeypatch, waits, call) -> None:
    answers = _Answers((503, "restarting"))
    api = _api(monkeypatch, answers, retry=RetryPolicy(retries=0))
    with pytest.raises(RayOrchClusterError, match="gave up after 1 tries"):
        call(api)
    assert len(answers.requests) == 1
    assert waits == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stop_is_asked_once_never_waiting_out_the_budget(monkeypatch, waits, mode) -> None:
    """``on_kill`` stops the job: a head answering 503 gets one request and the stop
    reports it did not happen, without a wait."""
    import json

    from airflow_provider_rayorch.hooks.rayorch import RayOrchHook

    answers = _Answers((503, "busy"))
    _api(monkeypatch, answers)  # every JobsApi client of the test talks to ``answers``
    monkeypatch.setenv(
        "AIRFLOW_CONN_RO_STOP", json.dumps({"conn_type": "rayorch", "host": ADDRESS})
    )
    hook = RayOrchHook("ro_stop")
    stopped = hook.stop_job("j") if mode == "sync" else asyncio.run(hook.astop_job("j"))
    assert stopped is False
    assert [r.url.path for r in answers.requests] == ["/api/jobs/j/stop"]
    assert waits == []
