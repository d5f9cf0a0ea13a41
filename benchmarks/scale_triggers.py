"""Waiting microbatch triggers in one triggerer loop: store reads, Jobs API requests, CPU.

    python -m benchmarks.scale_triggers --triggers 10 1000 --seconds 10

``N`` ``RayOrchMicrobatchTrigger``s (the public class, at the sensors' default 5 s
poll interval) wait in one asyncio loop, as a triggerer runs them, on microbatches
``0 .. N-1`` of one run that never commits, in a local run store, with a job that
stays RUNNING on a fake Jobs API (loopback, its own process) counting every request.
Store reads are counted on the store's filesystem (every ``RunStore`` opened while
they wait reads through a counting wrapper): opened files, stats and listings.
After a warm-up (``--warm``, three poll intervals), the counters run for
``seconds``; the loop's CPU (this process's, threads included) is given as a share of
one core.
Each count runs in a fresh process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.measure import child_result

__all__ = ["measure_triggers"]

REPO = Path(__file__).resolve().parent.parent
RUN_ID = "waiting"
JOB_ID = "j"
#: what the wrapper counts, by the name it reports
READS = {
    "open_input_stream": "opens",
    "open_input_file": "opens",
    "get_file_info": "stats",
}
#: the triggers' poll interval (the sensors' default poke interval)
POLL_S = 5.0
#: seconds the triggers run before the counters start: three poll intervals
WARM_S = 3 * POLL_S


class CountingFs:
    """A pyarrow filesystem whose reads are counted (a listing is a ``get_file_info``
    of a ``FileSelector``); everything else passes through."""

    def __init__(self, fs: Any, counts: Counter[str]) -> None:
        self._fs = fs
        self._counts = counts

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._fs, name)
        kind = READS.get(name)
        if kind is None:
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            import pyarrow.fs as pafs

            listing = bool(args) and isinstance(args[0], pafs.FileSelector)
            self._counts["listings" if listing else kind] += 1
            return attr(*args, **kwargs)

        return counted


def _serve(port: Any, requests: Any) -> None:
    """The fake Jobs API's process: every request answers one RUNNING job and is counted."""
    from aiohttp import web

    async def answer(request: web.Request) -> web.Response:
        with requests.get_lock():
            requests.value += 1
        body = {"job_id": JOB_ID, "status": "RUNNING", "message": "", "driver_exit_code": None}
        return web.json_response(body)

    async def serve() -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        port.put(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(serve())


class FakeJobsApi:
    """A fake Jobs API in a process of its own (its CPU is not the loop's), counting
    the requests it answers."""

    def __init__(self) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        self._requests = ctx.Value("q", 0)
        port = ctx.Queue()
        self._proc = ctx.Process(target=_serve, args=(port, self._requests), daemon=True)
        self._proc.start()
        self.address = f"http://127.0.0.1:{port.get(timeout=60)}"

    @property
    def requests(self) -> int:
        return int(self._requests.value)

    def stop(self) -> None:
        self._proc.terminate()
        self._proc.join(10)


def _waiting_run(root: str, count: int) -> None:
    """A planned run of ``count`` one-source microbatches, none committed."""
    from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

    RunStore(root).write_plan(
        PlanRecord(
            run_id=RUN_ID,
            pipeline="benchmarks.expand_reduce:Tiny",
            fingerprint="f" * 64,
            sources=list(range(count)),
            input_batch_size=1,
        )
    )


async def _wait(trigger: Any, fired: list[Any]) -> None:
    async for event in trigger.run():
        fired.append(event.payload)


async def _measure(
    root: str, count: int, seconds: float, warm_s: float, api: FakeJobsApi
) -> dict[str, Any]:
    from unittest import mock

    from airflow_provider_rayorch.runs import store as store_module
    from airflow_provider_rayorch.triggers.rayorch import RayOrchMicrobatchTrigger

    counts: Counter[str] = Counter()
    real_open = store_module.open_filesystem

    def counting_open(*args: Any, **kwargs: Any) -> Any:
        fs, path = real_open(*args, **kwargs)
        return CountingFs(fs, counts), path

    fired: list[Any] = []
    with mock.patch.object(store_module, "open_filesystem", counting_open):
        triggers = [
            RayOrchMicrobatchTrigger(
                run_id=RUN_ID,
                run_store=root,
                index=i,
                job_id=JOB_ID,
                address=api.address,
                poll_interval=POLL_S,
            )
            for i in range(count)
        ]
        tasks = [asyncio.create_task(_wait(t, fired)) for t in triggers]
        await asyncio.sleep(warm_s)
        before = (Counter(counts), api.requests, time.process_time())
        started = time.perf_counter()
        await asyncio.sleep(seconds)
        window = time.perf_counter() - started
        after = (Counter(counts), api.requests, time.process_time())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    reads = after[0] - before[0]
    cpu = after[2] - before[2]
    return {
        "triggers": count,
        "warm_up_s": round(warm_s, 1),
        "window_s": round(window, 2),
        "store_reads_per_s": round(sum(reads.values()) / window, 1),
        "store_reads_by_kind_per_s": {k: round(v / window, 1) for k, v in sorted(reads.items())},
        "jobs_api_requests_per_s": round((after[1] - before[1]) / window, 2),
        "loop_cpu_share": round(cpu / window, 3),
        "fired": len(fired),
    }


def measure_here(count: int, seconds: float, warm_s: float = WARM_S) -> dict[str, Any]:
    """:func:`measure_triggers` in this process."""
    api = FakeJobsApi()
    try:
        with tempfile.TemporaryDirectory(prefix="scale-triggers-") as root:
            _waiting_run(root, count)
            return asyncio.run(_measure(root, count, seconds, warm_s, api))
    finally:
        api.stop()


def measure_triggers(count: int, seconds: float, warm_s: float = WARM_S) -> dict[str, Any]:
    """``count`` waiting triggers for ``seconds`` after ``warm_s``, in a fresh process."""
    env = {k: v for k, v in os.environ.items() if k != "AIRFLOW_CONN_RAYORCH_DEFAULT"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    argv = ["-m", "benchmarks.scale_triggers", "--triggers", str(count), "--warm", str(warm_s)]
    return child_result(
        [*argv, "--seconds", str(seconds)],
        cwd=REPO,
        env=env,
        timeout=seconds + warm_s + 300,
        what=f"{count} triggers",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triggers", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warm", type=float, default=WARM_S, help="seconds before counting")
    args = parser.parse_args()
    if len(args.triggers) == 1:
        print(json.dumps(measure_here(args.triggers[0], args.seconds, args.warm)), flush=True)
        return
    for count in args.triggers:
        print(json.dumps(measure_triggers(count, args.seconds, args.warm)), flush=True)


if __name__ == "__main__":
    main()
