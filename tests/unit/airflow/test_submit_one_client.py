"""One httpx client (and one SSL context) per hook, sync and async, closed by
``close()`` / ``aclose()``: every request used to build a
new client and SSL context, and a new connection with them."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import httpx
import pytest
from submit_fakes import JsonHandler, serving

from airflow_provider_rayorch.hooks import jobs_api
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def api(monkeypatch) -> Iterator[tuple[str, list[int]]]:
    """A loopback Jobs API; yields its address and the client ports it saw."""
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    peers: list[int] = []

    class Handler(JsonHandler):
        def do_GET(self) -> None:
            peers.append(self.client_address[1])
            self.answer(200, {"ray_version": "2.60.0", "status": "RUNNING"})

    with serving(Handler) as address:
        yield address, peers


@pytest.fixture
def counted(monkeypatch) -> dict[str, int]:
    made = {"Client": 0, "AsyncClient": 0, "ssl": 0}
    for name in ("Client", "AsyncClient"):
        real = getattr(httpx, name)

        def counting(*args, _real=real, _name=name, **kwargs):
            made[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(jobs_api.httpx, name, counting)
    real_ssl = jobs_api.JobsApi.ssl_context

    def ssl_context(self):
        made["ssl"] += 1
        return real_ssl(self)

    monkeypatch.setattr(jobs_api.JobsApi, "ssl_context", ssl_context)
    return made


def test_one_sync_client_per_hook(api, counted) -> None:
    address, peers = api
    hook = RayOrchHook(address=address)
    for _ in range(3):
        assert hook.get_job_status("j") == "RUNNING"
    assert hook.check_reachable() == "2.60.0"
    assert counted["Client"] == 1
    assert counted["ssl"] == 1
    assert len(set(peers)) == 1  # one connection, kept alive
    hook.close()
    assert hook._clients.sync is None
    assert hook.get_job_status("j") == "RUNNING"  # a closed hook opens a new client
    hook.close()


def test_one_async_client_per_hook_and_loop(api, counted) -> None:
    address, _ = api
    hook = RayOrchHook(address=address)

    async def poll() -> None:
        for _ in range(3):
            assert await hook.aget_job_status("j") == "RUNNING"
        await hook.aclose()

    asyncio.run(poll())
    assert counted["AsyncClient"] == 1
    asyncio.run(poll())  # another event loop: a client of its own
    assert counted["AsyncClient"] == 2
