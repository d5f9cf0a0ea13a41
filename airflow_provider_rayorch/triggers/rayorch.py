"""Triggers: wait for a RayOrch Ray job, or for one source microbatch, asynchronously.

Both only use async I/O in ``run()``: the Jobs API through the hook's one request
path (httpx, awaited) and the run store through ``asyncio.to_thread``. Status reads
retry transient errors within the provider's one budget
(:mod:`airflow_provider_rayorch.common.polling`). Job logs are tailed separately from
the status poll, since the end of a log stream is not the end of a job: through the
Jobs API's log stream, each byte once (:mod:`..common.log_relay`), else by offset.
Both wait through the one job watch (:mod:`..common.job_watch`).

With ``end_from_trigger`` (the sensors' default) both judge the outcome with the
sensor's ``max_failed_ratio`` and end its task themselves, in the triggerer
(:mod:`._task_end` says why); without it (the operator's) they fire an event the task
resumes on.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_rayorch.common.job_end import ajob_end
from airflow_provider_rayorch.common.job_watch import JobObservation, JobWatch
from airflow_provider_rayorch.common.liveness import record_ended_without_manifest, record_stopped
from airflow_provider_rayorch.common.log_relay import (
    STREAM_CLOSE_WAIT_S,
    LineRelay,
    astream_job_logs,
)
from airflow_provider_rayorch.common.microbatch_story import log_microbatch, log_run
from airflow_provider_rayorch.common.polling import COMMIT_LOOK_S, END_POLL_S, RetryPolicy
from airflow_provider_rayorch.common.repair import ended_before_commit
from airflow_provider_rayorch.common.states import JobStatus, with_job_status
from airflow_provider_rayorch.exceptions import RayOrchClusterError
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.triggers._task_end import failed_end, judged_end

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ["RayOrchJobTrigger", "RayOrchMicrobatchTrigger"]


def _positive(name: str, value: float) -> float:
    value = float(value)
    if value <= 0:
        raise UsageError(f"{name} must be > 0 seconds, got {value}")
    return value


async def _sleep_watching(watch: JobWatch, wait_s: float) -> dict[str, Any] | None:
    """Sleep ``wait_s`` looking at the watch's awaited manifest every
    :data:`COMMIT_LOOK_S`; return it as soon as it is there (None: not within
    ``wait_s``). A commit is seen within a second, the job read stays at its interval."""
    loop = asyncio.get_running_loop()
    until = loop.time() + wait_s
    while (left := until - loop.time()) > 0:
        await asyncio.sleep(min(COMMIT_LOOK_S, left))
        found = await watch.aawaited()
        if found is not None:
            return found
    return None


async def _close(hook: RayOrchHook) -> None:
    """Close the hook's HTTP client: a triggerer runs for weeks, one trigger after
    another, and an unclosed client keeps its connections."""
    with contextlib.suppress(Exception):
        await hook.aclose()


class RayOrchJobTrigger(BaseTrigger):
    """Fires once the Ray job of a run ends; logs committed microbatches and job logs.

    Event payload: ``{"status": "success"|"error", "run_id", "job_id", "job_status",
    "message"}``. With ``end_from_trigger`` (the run sensor's) it ends the task instead:
    success with the judged run summary, or failure when the run failed the bar or the
    job ended without a run manifest.
    """

    def __init__(
        self,
        *,
        job_id: str,
        run_id: str,
        run_store: str,
        rayorch_conn_id: str = RayOrchHook.default_conn_name,
        address: str | None = None,
        poll_interval: float = 5.0,
        tail_logs: bool = True,
        max_failed_ratio: float = 0.0,
        end_from_trigger: bool = False,
        to_clear: str = "the task",
    ) -> None:
        super().__init__()
        if not job_id or not run_id or not run_store:
            raise UsageError(
                "RayOrchJobTrigger: job_id, run_id and run_store are required, got "
                f"job_id={job_id!r}, run_id={run_id!r}, run_store={run_store!r}"
            )
        self.job_id = str(job_id)
        self.run_id = str(run_id)
        self.run_store = str(run_store)
        self.rayorch_conn_id = str(rayorch_conn_id)
        self.address = address or None
        self.poll_interval = _positive("poll_interval", poll_interval)
        self.tail_logs = bool(tail_logs)
        self._streaming = False  # the tail reads Ray's log stream (it ends by itself)
        self.max_failed_ratio = float(max_failed_ratio)
        self.end_from_trigger = bool(end_from_trigger)
        #: what a failed end tells to clear once the cause is fixed (the run sensor's)
        self.to_clear = str(to_clear)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "job_id": self.job_id,
                "run_id": self.run_id,
                "run_store": self.run_store,
                "rayorch_conn_id": self.rayorch_conn_id,
                "address": self.address,
                "poll_interval": self.poll_interval,
                "tail_logs": self.tail_logs,
                "max_failed_ratio": self.max_failed_ratio,
                "end_from_trigger": self.end_from_trigger,
                "to_clear": self.to_clear,
            },
        )

    def _hook(self) -> RayOrchHook:
        # the job was submitted before this trigger existed: connection errors are
        # transient from the first request (a dashboard restarting)
        retry = RetryPolicy(base_s=self.poll_interval)
        return RayOrchHook(
            self.rayorch_conn_id, address=self.address, answered_before=True, retry=retry
        )

    async def _tail(self, hook: RayOrchHook) -> None:
        relay = LineRelay(self.log, f"[ray job {self.job_id}]")
        self._streaming = True  # Ray closes the stream itself once the job ended
        try:
            try:
                async for chunk in astream_job_logs(await hook.aapi(), self.job_id):
                    relay.feed(chunk)
                relay.flush()
                return
            except Exception as exc:  # no stream (an old Ray, a proxy): by offset instead
                self.log.debug("no log stream for %s (%s): reading it by offset", self.job_id, exc)
            self._streaming = False
            skip = relay.consumed  # the whole log comes again: relay only what is new
            async for chunk in hook.atail_job_logs(self.job_id):
                cut = min(skip, len(chunk))
                skip -= cut
                relay.feed(chunk[cut:])
            relay.flush()
        except asyncio.CancelledError:
            relay.flush()
            raise
        except Exception as exc:  # logs are best effort; the status poll decides
            self.log.info("log tail of %s ended: %s", self.job_id, exc)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        hook = self._hook()
        store = await hook.arun_store(self.run_store)  # with the connection's options
        tail = asyncio.create_task(self._tail(hook)) if self.tail_logs else None
        watch = JobWatch(
            store=store,
            run_id=self.run_id,
            job_id=self.job_id,
            read_job=lambda: hook.aget_job_info(self.job_id),
            interval=self.poll_interval,
            log=self.log,
            count_commits=True,
            job_must_succeed=not self.end_from_trigger,  # the operator's (maybe a repair)
        )
        seen: int | None = -1
        # set once the run manifest is there (its job ends soon); once only, since a
        # repair's run manifest predates its job
        ending_until: float | None = None
        loop = asyncio.get_running_loop()
        try:
            while True:
                try:
                    obs = await watch.alook()
                except RayOrchClusterError as exc:
                    if self.end_from_trigger:  # judged by the run store alone
                        yield await self._run_end(store, await self._unknown(store, exc))
                    else:
                        yield TriggerEvent(self._event("error", "UNKNOWN", str(exc)))
                    return
                if obs.committed != seen:
                    seen = obs.committed
                    self.log.info("run %s: %d microbatch(es) committed", self.run_id, seen)
                if obs.ended:
                    await self._log_end(tail)
                    if self.end_from_trigger:
                        yield await self._run_end(store, obs)
                        return
                    ok = obs.succeeded or obs.status is JobStatus.SUCCEEDED
                    yield TriggerEvent(
                        self._event("success" if ok else "error", str(obs.status), obs.message)
                    )
                    return
                if ending_until is not None:
                    fast = loop.time() < ending_until
                    await asyncio.sleep(END_POLL_S if fast else self.poll_interval)
                elif await _sleep_watching(watch, self.poll_interval) is not None:
                    ending_until = loop.time() + self.poll_interval  # the driver exits
        finally:
            if tail is not None:
                tail.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await tail
            await _close(hook)

    async def _log_end(self, tail: asyncio.Task[None] | None) -> None:
        """Let a streaming tail relay the log's last lines (an error line among them)
        before the task ends; Ray closes the stream once it read the log to its end."""
        if tail is not None and self._streaming:
            await asyncio.wait({tail}, timeout=STREAM_CLOSE_WAIT_S)

    async def _unknown(self, store: Any, exc: Exception) -> JobObservation:
        """The observation when the job cannot be read (the retry budget ran out)."""
        manifest = await asyncio.to_thread(store.read_run_manifest, self.run_id)
        found = None if manifest is None else with_job_status(manifest)
        return JobObservation(None, None, found, True, found is not None, str(exc))

    async def _run_end(self, store: Any, obs: JobObservation) -> TriggerEvent:
        """End the run sensor's task: judge the run manifest, or fail without one (and
        record how the job ended, for the UI)."""
        if obs.succeeded and obs.manifest is not None:
            log_run(self.log, obs.manifest, self.run_id)  # the task ends here: say what it did
            return await judged_end(
                self.task_instance,
                obs.manifest,
                self.max_failed_ratio,
                what=f"run {self.run_id}",
                log=self.log,
            )
        if obs.manifest is not None:
            return failed_end(
                f"Ray job {self.job_id} ended {obs.status or 'UNKNOWN'} after writing the run "
                f"manifest of run {self.run_id}: {await self._why(store)}. See the job's "
                f"driver log (the task's Ray job link), fix the cause, then clear {self.to_clear}",
                log=self.log,
            )
        error = await asyncio.to_thread(
            record_ended_without_manifest,
            store,
            self.run_id,
            self.job_id,
            str(obs.status or "UNKNOWN"),
            await self._why(store),
            log=self.log,
            clear=self.to_clear,
        )
        return failed_end(error, log=self.log)

    async def _why(self, store: Any) -> str:
        """Why the job ended, in the driver's words, and where its log is kept; logs the
        driver's last lines."""
        hook = self._hook()
        try:
            end = await ajob_end(hook, store, self.run_id, self.job_id)
        finally:
            await _close(hook)
        end.log_tail(self.log)
        return end.why

    def _event(self, status: str, job_status: str, message: str) -> dict[str, Any]:
        return {
            "status": status,
            "run_id": self.run_id,
            "job_id": self.job_id,
            "job_status": job_status,
            "message": message,
        }

    async def on_kill(self) -> None:
        """The user killed the deferred task: stop (never delete) the Ray job."""
        hook = self._hook()
        try:
            if await hook.astop_job(self.job_id):
                store = await hook.arun_store(self.run_store)
                await asyncio.to_thread(
                    record_stopped, store, self.run_id, self.job_id, log=self.log
                )
        finally:
            await _close(hook)


class RayOrchMicrobatchTrigger(BaseTrigger):
    """Fires as soon as one source microbatch's manifest commits.

    Event payload: ``{"status": "committed", "index", "summary"}``, or
    ``{"status": "error", "index", "message"}`` when the job ended without it. With
    ``end_from_trigger`` (the microbatch sensor's) it ends the task instead: success
    with the judged manifest, or failure.
    """

    def __init__(
        self,
        *,
        run_id: str,
        run_store: str,
        index: int,
        job_id: str | None = None,
        rayorch_conn_id: str = RayOrchHook.default_conn_name,
        address: str | None = None,
        poll_interval: float = 5.0,
        max_failed_ratio: float = 0.0,
        end_from_trigger: bool = False,
    ) -> None:
        super().__init__()
        if not run_id or not run_store:
            raise UsageError(
                "RayOrchMicrobatchTrigger: run_id and run_store are required, got "
                f"run_id={run_id!r}, run_store={run_store!r}"
            )
        if int(index) < 0:
            raise UsageError(f"RayOrchMicrobatchTrigger: index must be >= 0, got {index}")
        self.run_id = str(run_id)
        self.run_store = str(run_store)
        self.index = int(index)
        self.job_id = str(job_id) if job_id else None
        self.rayorch_conn_id = str(rayorch_conn_id)
        self.address = address or None
        self.poll_interval = _positive("poll_interval", poll_interval)
        self.max_failed_ratio = float(max_failed_ratio)
        self.end_from_trigger = bool(end_from_trigger)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "run_id": self.run_id,
                "run_store": self.run_store,
                "index": self.index,
                "job_id": self.job_id,
                "rayorch_conn_id": self.rayorch_conn_id,
                "address": self.address,
                "poll_interval": self.poll_interval,
                "max_failed_ratio": self.max_failed_ratio,
                "end_from_trigger": self.end_from_trigger,
            },
        )

    async def _committed(self, manifest: dict[str, Any]) -> TriggerEvent:
        if not self.end_from_trigger:
            return TriggerEvent({"status": "committed", "index": self.index, "summary": manifest})
        log_microbatch(self.log, manifest, self.run_id)  # the task ends here: say what it did
        return await judged_end(
            self.task_instance,
            manifest,
            self.max_failed_ratio,
            what=f"microbatch {self.index} of run {self.run_id}",
            log=self.log,
        )

    def _not_committed(self, message: str) -> TriggerEvent:
        if not self.end_from_trigger:
            return TriggerEvent({"status": "error", "index": self.index, "message": message})
        return failed_end(message, log=self.log)

    async def _why_ended(self, hook: RayOrchHook, store: Any) -> str:
        """Why the job ended before the commit, in the driver's words, and where its log
        is kept; logs the driver's last lines."""
        end = await ajob_end(hook, store, self.run_id, str(self.job_id))
        end.log_tail(self.log)
        return end.why

    async def run(self) -> AsyncIterator[TriggerEvent]:
        retry = RetryPolicy(base_s=self.poll_interval)
        hook = RayOrchHook(
            self.rayorch_conn_id, address=self.address, answered_before=True, retry=retry
        )
        store = await hook.arun_store(self.run_store)  # with the connection's run_store_options
        job_id = self.job_id
        watch = JobWatch(
            store=store,
            run_id=self.run_id,
            job_id=job_id,
            read_job=None if job_id is None else (lambda: hook.aget_job_status(job_id)),
            interval=self.poll_interval,
            log=self.log,
            index=self.index,
        )
        try:
            while True:
                try:
                    obs = await watch.alook()
                except RayOrchClusterError as exc:
                    yield self._not_committed(str(exc))
                    return
                if obs.ended:
                    if obs.manifest is not None:
                        yield await self._committed(obs.manifest)
                    else:
                        yield self._not_committed(
                            ended_before_commit(
                                self.job_id,
                                obs.status,
                                self.index,
                                self.run_id,
                                await self._why_ended(hook, store),
                            )
                        )
                    return
                manifest = await _sleep_watching(watch, self.poll_interval)
                if manifest is not None:
                    yield await self._committed(manifest)
                    return
        finally:
            await _close(hook)
