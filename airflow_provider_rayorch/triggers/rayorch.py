"""Triggers: wait for a RayOrch Ray job, or for one source microbatch, asynchronously.

The triggers of one run share one run watcher in the triggerer
(:mod:`._run_watch`): it follows the job's log stream, where the driver announces
each commit and the run's end, and reads the job's status once per poll interval for
the whole run; without the stream it lists the run's commits once per
:data:`COMMIT_LOOK_S`. A trigger woken for its microbatch (or by the job's end) reads
its own record once and fires on what the store says. Store reads run through
``asyncio.to_thread``; status reads retry transient errors within the provider's one
budget (:mod:`airflow_provider_rayorch.common.polling`). The run trigger tails the
job's log into its task log on its own (the end of a log stream is not the end of a
job): through the Jobs API's log stream, each byte once (:mod:`..common.log_relay`),
else by offset.

With ``end_from_trigger`` (the sensors' default) both judge the outcome with the
sensor's ``max_failed_ratio`` and end its task themselves, in the triggerer
(:mod:`._task_end` says why); without it (the operator's) they fire an event the task
resumes on.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_rayorch.common.job_end import ajob_end
from airflow_provider_rayorch.common.job_watch import (
    JobObservation,
    StoreFacts,
    observe,
    stamped,
)
from airflow_provider_rayorch.common.liveness import record_ended_without_manifest, record_stopped
from airflow_provider_rayorch.common.log_relay import (
    STREAM_CLOSE_WAIT_S,
    LineRelay,
)
from airflow_provider_rayorch.common.microbatch_story import log_microbatch, log_run
from airflow_provider_rayorch.common.polling import COMMIT_LOOK_S, END_POLL_S, RetryPolicy
from airflow_provider_rayorch.common.repair import ended_before_commit
from airflow_provider_rayorch.common.states import JobStatus
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.triggers._fields import DeclaredFields
from airflow_provider_rayorch.triggers._run_watch import RunKey, Waiter, watching
from airflow_provider_rayorch.triggers._task_end import failed_end, judged_end

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ["RayOrchJobTrigger", "RayOrchMicrobatchTrigger"]


def _positive(name: str, value: float) -> float:
    value = float(value)
    if value <= 0:
        raise UsageError(f"{name} must be > 0 seconds, got {value}")
    return value


async def _close(hook: RayOrchHook) -> None:
    """Close the hook's HTTP client: a triggerer runs for weeks, one trigger after
    another, and an unclosed client keeps its connections."""
    with contextlib.suppress(Exception):
        await hook.aclose()


class RunOptions(TypedDict, total=False):
    """The keywords both triggers take beside their run: how to reach the cluster
    (``rayorch_conn_id``, default ``rayorch_default``; ``address``), how often to
    look (``poll_interval``, default 5 s), the failed-ratio bar
    (``max_failed_ratio``, default 0) and whether the trigger ends the task
    (``end_from_trigger``, default False)."""

    rayorch_conn_id: str
    address: str | None
    poll_interval: float
    max_failed_ratio: float
    end_from_trigger: bool


class _RunTrigger(DeclaredFields, BaseTrigger):
    """What both triggers share: the run they watch (its store, maybe its job), how
    to reach the cluster, and how the task ends."""

    run_id: str
    run_store: str
    job_id: str | None
    rayorch_conn_id: str
    address: str | None
    poll_interval: float
    max_failed_ratio: float
    end_from_trigger: bool

    def _set_run(
        self,
        run_id: str,
        run_store: str,
        job_id: str | None,
        *,
        rayorch_conn_id: str = RayOrchHook.default_conn_name,
        address: str | None = None,
        poll_interval: float = 5.0,
        max_failed_ratio: float = 0.0,
        end_from_trigger: bool = False,
    ) -> None:
        """Keep the run's fields; the defaults of :class:`RunOptions` are these."""
        self.run_id = str(run_id)
        self.run_store = str(run_store)
        self.job_id = str(job_id) if job_id else None
        self.rayorch_conn_id = str(rayorch_conn_id)
        self.address = address or None
        self.poll_interval = _positive("poll_interval", poll_interval)
        self.max_failed_ratio = float(max_failed_ratio)
        self.end_from_trigger = bool(end_from_trigger)

    def _hook(self) -> RayOrchHook:
        """A hook for the trigger's connection. The job was submitted before the
        trigger existed: connection errors are transient from the first request (a
        dashboard restarting)."""
        retry = RetryPolicy(base_s=self.poll_interval)
        return RayOrchHook(
            self.rayorch_conn_id, address=self.address, answered_before=True, retry=retry
        )

    def _watching(self, index: int | None) -> contextlib.AbstractAsyncContextManager[Waiter]:
        """Attach to the run's watcher: for microbatch ``index``, or (None) for the
        run's end, with every commit."""
        key = RunKey(self.rayorch_conn_id, self.address, self.run_store, self.run_id, self.job_id)
        return watching(
            key,
            self._hook,
            index=index,
            poll_s=self.poll_interval,
            look_s=COMMIT_LOOK_S,
            end_poll_s=END_POLL_S,
            run_end=index is None,
        )


class RayOrchJobTrigger(_RunTrigger):
    """Fires once the Ray job of a run ends; logs committed microbatches and job logs.

    Event payload: ``{"status": "success"|"error", "run_id", "job_id", "job_status",
    "message"}``. With ``end_from_trigger`` (the run sensor's) it ends the task instead:
    success with the judged run summary, or failure when the run failed the bar or the
    job ended without a run manifest.
    """

    serialized = (
        "job_id",
        "run_id",
        "run_store",
        "rayorch_conn_id",
        "address",
        "poll_interval",
        "tail_logs",
        "max_failed_ratio",
        "end_from_trigger",
        "to_clear",
    )

    def __init__(
        self,
        *,
        job_id: str,
        run_id: str,
        run_store: str,
        tail_logs: bool = True,
        to_clear: str = "the task",
        **options: Unpack[RunOptions],
    ) -> None:
        super().__init__()
        if not job_id or not run_id or not run_store:
            raise UsageError(
                "RayOrchJobTrigger: job_id, run_id and run_store are required, got "
                f"job_id={job_id!r}, run_id={run_id!r}, run_store={run_store!r}"
            )
        self._set_run(run_id, run_store, job_id, **options)
        self.job_id: str = str(job_id)
        self.tail_logs = bool(tail_logs)
        self._streaming = False  # the tail reads Ray's log stream (it ends by itself)
        #: what a failed end tells to clear once the cause is fixed (the run sensor's)
        self.to_clear = str(to_clear)

    async def _tail(self, waiter: Waiter) -> None:
        """Relay the job's log to the task log: the run watcher's stream (the part that
        came before this trigger attached read once by offset), else by offset."""
        relay = LineRelay(self.log, f"[ray job {self.job_id}]")
        hook, watcher = waiter.hook, waiter.watcher
        feed = watcher.subscribe()
        try:
            if feed is not None:
                before, chunks = feed
                self._streaming = True  # Ray closes the stream itself once the job ended
                try:
                    if before:
                        relay.feed((await hook.aget_job_logs(self.job_id))[:before])
                    while (chunk := await chunks.get()) is not None:
                        relay.feed(chunk)
                finally:
                    watcher.unsubscribe(chunks)
                if not watcher.stream_failed:
                    relay.flush()
                    return
                self._streaming = False  # no stream (an old Ray, a proxy): by offset
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
        async with self._watching(None) as waiter:
            store = waiter.store
            tail = asyncio.create_task(self._tail(waiter)) if self.tail_logs else None
            seen = -1
            try:
                while True:
                    facts = waiter.facts()
                    if facts.error is not None:
                        if self.end_from_trigger:  # judged by the run store alone
                            yield await self._run_end(
                                store, await self._unknown(store, facts.error)
                            )
                        else:
                            yield TriggerEvent(self._event("error", "UNKNOWN", str(facts.error)))
                        return
                    if facts.committed != seen:
                        seen = facts.committed
                        self.log.info("run %s: %d microbatch(es) committed", self.run_id, seen)
                    if facts.job_ended:
                        manifest = await asyncio.to_thread(store.run_manifest_record, self.run_id)
                        obs = observe(
                            facts.status,
                            StoreFacts(facts.committed, manifest),
                            message=facts.message,
                            job_must_succeed=not self.end_from_trigger,  # maybe a repair
                        )
                        await self._log_end(tail)
                        if self.end_from_trigger:
                            yield await self._run_end(store, obs)
                            return
                        ok = obs.succeeded or obs.status is JobStatus.SUCCEEDED
                        yield TriggerEvent(
                            self._event("success" if ok else "error", str(obs.status), obs.message)
                        )
                        return
                    await waiter.wait()
            finally:
                if tail is not None:
                    tail.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await tail

    async def _log_end(self, tail: asyncio.Task[None] | None) -> None:
        """Let a streaming tail relay the log's last lines (an error line among them)
        before the task ends; Ray closes the stream once it read the log to its end."""
        if tail is not None and self._streaming:
            await asyncio.wait({tail}, timeout=STREAM_CLOSE_WAIT_S)

    async def _unknown(self, store: Any, exc: Exception) -> JobObservation:
        """The observation when the job cannot be read (the retry budget ran out)."""
        manifest = await asyncio.to_thread(store.run_manifest_record, self.run_id)
        found = None if manifest is None else stamped(manifest)
        return JobObservation(None, None, found, True, found is not None, str(exc))

    async def _run_end(self, store: Any, obs: JobObservation) -> TriggerEvent:
        """End the run sensor's task: judge the run manifest, or fail without one (and
        record how the job ended, for the UI)."""
        if obs.succeeded and obs.manifest is not None:
            summary = plain(obs.manifest)
            log_run(self.log, summary, self.run_id)  # the task ends here: say what it did
            return await judged_end(
                self.task_instance,
                summary,
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


class RayOrchMicrobatchTrigger(_RunTrigger):
    """Fires as soon as one source microbatch's manifest commits.

    Event payload: ``{"status": "committed", "index", "summary"}``, or
    ``{"status": "error", "index", "message"}`` when the job ended without it. With
    ``end_from_trigger`` (the microbatch sensor's) it ends the task instead: success
    with the judged manifest, or failure.
    """

    serialized = (
        "run_id",
        "run_store",
        "index",
        "job_id",
        "rayorch_conn_id",
        "address",
        "poll_interval",
        "max_failed_ratio",
        "end_from_trigger",
    )

    def __init__(
        self,
        *,
        run_id: str,
        run_store: str,
        index: int,
        job_id: str | None = None,
        **options: Unpack[RunOptions],
    ) -> None:
        super().__init__()
        if not run_id or not run_store:
            raise UsageError(
                "RayOrchMicrobatchTrigger: run_id and run_store are required, got "
                f"run_id={run_id!r}, run_store={run_store!r}"
            )
        if int(index) < 0:
            raise UsageError(f"RayOrchMicrobatchTrigger: index must be >= 0, got {index}")
        self._set_run(run_id, run_store, job_id, **options)
        self.index = int(index)

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
        async with self._watching(self.index) as waiter:
            store = waiter.store
            while True:
                await waiter.wait()
                facts = waiter.facts()  # before the read: a commit then an end is a commit
                manifest = await asyncio.to_thread(store.manifest_record, self.run_id, self.index)
                if manifest is not None:
                    yield await self._committed(plain(manifest))
                    return
                if facts.error is not None:
                    yield self._not_committed(str(facts.error))
                    return
                if facts.job_ended:
                    why = await self._why_ended(waiter.hook, store)
                    yield self._not_committed(
                        ended_before_commit(self.job_id, facts.status, self.index, self.run_id, why)
                    )
                    return
