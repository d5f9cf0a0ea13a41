"""Bytes the operator fetches to relay a job log that grows to ``--mb`` MB.

A fake Jobs API on loopback serves one job whose log grows by an equal chunk on each
status read, for ``--polls`` reads, then ends. The operator's poll loop relays it
twice: through Ray's log stream (``/api/jobs/<id>/logs/tail``, a websocket), and with
no stream, by reading the whole log (``/api/jobs/<id>/logs``) on every poll as the
provider did before (and still does where the stream is refused). Run::

    .venv/bin/python -m benchmarks.log_relay --mb 10 --polls 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from aiohttp import web

__all__ = ["FakeJobsApi", "relay_once"]


@dataclass
class FakeJobsApi:
    """One job ``j`` whose log grows by ``chunk`` characters per status read."""

    total: int
    polls: int
    stream: bool = True
    log: str = ""
    reads: int = 0
    log_bytes: int = 0  # bytes served for the log, whichever way
    whole_reads: int = 0  # GET /api/jobs/j/logs answered
    address: str = ""
    _loop: Any = field(default=None, repr=False)
    _runner: Any = field(default=None, repr=False)

    @property
    def ended(self) -> bool:
        return self.reads >= self.polls

    def _grow(self) -> None:
        want = self.total * self.reads // self.polls
        first, last = len(self.log) // 100, -(-want // 100)  # 100-character lines
        self.log += "".join(f"{n:08d}{91 * 'x'}\n" for n in range(first, last))

    async def _info(self, request: web.Request) -> web.Response:
        self.reads += 1
        self._grow()
        status = "SUCCEEDED" if self.ended else "RUNNING"
        return web.json_response({"status": status, "message": "", "driver_exit_code": None})

    async def _logs(self, request: web.Request) -> web.Response:
        self.whole_reads += 1
        body = json.dumps({"logs": self.log})
        self.log_bytes += len(body.encode())
        return web.Response(text=body, content_type="application/json")

    async def _tail(self, request: web.Request) -> web.StreamResponse:
        if not self.stream:
            raise web.HTTPNotFound()
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        sent = 0
        while True:
            if len(self.log) > sent:
                chunk, sent = self.log[sent:], len(self.log)
                self.log_bytes += len(chunk.encode())
                await ws.send_str(chunk)
            elif self.ended:
                break
            else:
                await asyncio.sleep(0.002)
        await ws.close()
        return ws

    def start(self) -> FakeJobsApi:
        app = web.Application()
        app.router.add_get("/api/jobs/j", self._info)
        app.router.add_get("/api/jobs/j/logs", self._logs)
        app.router.add_get("/api/jobs/j/logs/tail", self._tail)
        self._loop = asyncio.new_event_loop()
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        port = self._runner.addresses[0][1]
        self.address = f"http://127.0.0.1:{port}"
        threading.Thread(target=self._loop.run_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        async def cleanup() -> None:
            await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)


def relay_once(
    api: FakeJobsApi, run_store: str, lines: list[str] | None = None, *, stream: bool = True
) -> Any:
    """The operator's poll loop over the fake job; relayed lines go to ``lines``.
    ``stream=False``: as before the stream, the whole log on every poll."""
    from airflow_provider_rayorch.common import log_relay
    from airflow_provider_rayorch.operators import _job_wait
    from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

    class NoStream(log_relay.LogFollower):
        def start(self) -> log_relay.LogFollower:
            self.failed = RuntimeError("the stream is not used")
            return self

    op = RayOrchOperator(
        task_id="t",
        pipeline="fake_pipelines:Square",
        sources=[1],
        ray_address=api.address,
        run_store=run_store,
        poll_interval=0.0,
    )
    ti = mock.MagicMock(dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    relayed = lines if lines is not None else []
    follower = log_relay.LogFollower if stream else NoStream
    with (
        mock.patch.object(log_relay, "relay_line", lambda _log, _p, line: relayed.append(line)),
        mock.patch.object(_job_wait, "LogFollower", follower),
    ):
        return op._poll("j", {"ti": ti})  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--polls", type=int, default=100)
    args = parser.parse_args()
    total = int(args.mb * 1_000_000)
    results = {}
    for name, stream in (("stream", True), ("whole log per poll", False)):
        api = FakeJobsApi(total=total, polls=args.polls, stream=stream).start()
        try:
            with tempfile.TemporaryDirectory() as store:
                relay_once(api, store, stream=stream)
        finally:
            api.stop()
        results[name] = api.log_bytes
        print(f"{name}: {api.log_bytes / 1e6:,.1f} MB fetched for a {args.mb:g} MB log")
    ratio = results["whole log per poll"] / max(results["stream"], 1)
    print(f"{args.polls} polls: the stream fetches {ratio:,.0f}x fewer bytes")


if __name__ == "__main__":
    main()
