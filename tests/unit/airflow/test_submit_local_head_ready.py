"""A loopback head is ready only when its job agent can take jobs.

Ray's dashboard answers ``/api/version`` before the head's job agent is up; a submit
then hangs about 10 s and fails with HTTP 500 "No available agent". Here ``ray start``
is replaced by a fake process, the dashboard by a loopback server that answers the
version at once, and the agent comes up only after a few probes: ``start_local_head``
must not return before the agent's health check answers.
"""

from __future__ import annotations

import itertools
import os
from http.server import ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
from submit_fakes import JsonHandler, start, stop

from airflow_provider_rayorch.operators import _head_start

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.timeout(60)


class FakeHead:
    """A dashboard that answers at once and an agent that starts after 3 version probes."""

    def __init__(self, agent_after: int = 3) -> None:
        self.version_probes = 0
        self.agent_asked = 0
        self.agent: ThreadingHTTPServer | None = None
        head = self

        class Agent(JsonHandler):
            def do_GET(self) -> None:
                head.agent_asked += 1
                self.answer(200 if self.path == "/api/healthz" else 404, "raylet: success")

        class Dashboard(JsonHandler):
            def do_GET(self) -> None:
                if self.path == "/api/version":
                    head.version_probes += 1
                    if head.version_probes == agent_after:  # the agent comes up late
                        head.agent = start(Agent, head.agent_port)
                    self.answer(200, {"ray_version": "2.60.0"})
                else:
                    self.answer(200, [])

        self.dashboard = start(Dashboard)
        # a port for the agent, free until the agent binds it
        probe = ThreadingHTTPServer(("127.0.0.1", 0), Agent)
        self.agent_port = probe.server_address[1]
        probe.server_close()

    def ports(self) -> Iterator[int]:
        """What ``_free_port`` hands out, in start_local_head's order."""
        yield self.dashboard.server_address[1]  # dashboard
        yield 1  # gcs (unused: no real ray)
        yield 2  # ray client server
        yield self.agent_port  # dashboard agent listen port
        yield from itertools.count(3)  # the agents' other ports (unused: no real ray)

    def close(self) -> None:
        stop(self.dashboard)
        stop(self.agent)


class FakeRayStart:
    """Stands in for ``ray start --head --block``: alive, never exits."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.pid = os.getpgrp()  # stop_local_head refuses to signal its own group
        self.returncode = None

    def poll(self) -> None:
        return None


@pytest.fixture
def fake_head(monkeypatch, tmp_path) -> Iterator[FakeHead]:
    head = FakeHead()
    ports = head.ports()
    monkeypatch.setattr(_head_start, "_free_port", lambda: next(ports))
    monkeypatch.setattr(_head_start, "_ray_executable", lambda: "ray")
    monkeypatch.setattr(_head_start.subprocess, "Popen", FakeRayStart)
    monkeypatch.setattr(_head_start.time, "sleep", lambda s: None)  # the probes pace the test
    monkeypatch.setenv("RAYORCH_LOCAL_HEADS_DIR", str(tmp_path / "heads"))
    try:
        yield head
    finally:
        head.close()


def test_the_head_is_up_only_when_its_job_agent_answers(fake_head: FakeHead, tmp_path) -> None:
    info = _head_start.start_local_head(temp_root=str(tmp_path), timeout=30)
    assert fake_head.agent is not None, "returned before the job agent was up"
    assert fake_head.agent_asked >= 1
    assert info["address"].endswith(f":{fake_head.dashboard.server_address[1]}")
