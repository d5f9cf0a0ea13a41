"""One watcher per run in the triggerer, shared by every trigger of that run.

The triggers of a run (a run sensor's, and up to thousands of mapped microbatch
sensors') attach to one :class:`RunWatcher`, kept in a registry per event loop and
keyed by :class:`RunKey`: the first attach starts it, the last detach stops it. The
watcher follows the job's log stream once and wakes the waiters of microbatch ``i``
when the driver announces its commit (``RAYORCH_EVENT {"event": "microbatch"}``);
the driver's ``end`` event makes it read the job's status at :class:`EndPoll`'s fast
cadence. While the stream is not there (not yet, broken, or refused) it lists the
run's committed microbatches once per look instead (a failed listing is tried again
at the next look, for :data:`STORE_PATIENCE_S`). Either way the job's status is
read once per poll interval for the whole run; its end, or an unreadable job, wakes
every waiter. A woken trigger reads its own record once: the store is the truth, the
watcher only says when to look.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from airflow_provider_rayorch.common.job_watch import job_reading
from airflow_provider_rayorch.common.log_relay import (
    STREAM_CLOSE_WAIT_S,
    RunEvents,
    astream_job_logs,
)
from airflow_provider_rayorch.common.polling import EndPoll
from airflow_provider_rayorch.exceptions import RayOrchClusterError
from airflow_provider_rayorch.rayorch.errors import RayOrchError, StoreError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from airflow_provider_rayorch.common.states import JobStatus
    from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["RunFacts", "RunKey", "RunWatcher", "Waiter", "watchers", "watching"]

#: the watcher's own logger: it outlives the trigger that started it
_LOG = logging.getLogger(__name__)
#: how long the store's listings may fail in a row (a failed one is tried again at the
#: next look) before the watcher gives up and every trigger raises the last error
STORE_PATIENCE_S = 300.0


@dataclass(frozen=True)
class RunKey:
    """What makes two triggers watch the same run: the same connection, address, run
    store, run and job."""

    conn_id: str
    address: str | None
    run_store: str
    run_id: str
    job_id: str | None


@dataclass(frozen=True)
class RunFacts:
    """What the watcher knows now.

    :ivar committed: microbatches known committed (announced or listed).
    :ivar status: the job's last read status (None: not read yet, or no job).
    :ivar message: Ray's word on the job from the last read.
    :ivar error: the job could not be read (the retry budget ran out).
    :ivar job_ended: the job's status is terminal.
    """

    committed: int
    status: JobStatus | None
    message: str
    error: RayOrchClusterError | None
    job_ended: bool


class Waiter:
    """One trigger's attachment: :meth:`wait` returns once something it waits for may
    have happened (its microbatch announced, any commit for a run waiter, the end)."""

    def __init__(
        self, watcher: RunWatcher, index: int | None, poll_s: float, *, run_end: bool
    ) -> None:
        self.watcher, self.index, self.poll_s, self.run_end = watcher, index, poll_s, run_end
        self._wake = asyncio.Event()

    @property
    def store(self) -> RunStore:
        return self.watcher.store

    @property
    def hook(self) -> RayOrchHook:
        return self.watcher.hook

    def facts(self) -> RunFacts:
        """What the watcher knows now; raises what stopped the watcher, if anything."""
        return self.watcher.facts()

    def wake(self) -> None:
        self._wake.set()

    async def wait(self) -> None:
        """Until woken (at once when woken since the last wait)."""
        await self._wake.wait()
        self._wake.clear()


class RunWatcher:
    """Follows one run for all its waiters (see the module's docstring).

    :param open_hook: builds the hook the watcher reads the job and opens the store
        with (closed when the watcher stops).
    :param look_s: between two listings of the committed microbatches, while the log
        stream is not there.
    :param end_poll_s: the job read's cadence once the driver said its run ended.

    Its task runs in a context of its own, not the first trigger's: the triggerer binds
    each trigger's ids there, and its log lines would go to that trigger's log.
    """

    def __init__(
        self,
        key: RunKey,
        open_hook: Callable[[], RayOrchHook],
        *,
        look_s: float,
        end_poll_s: float,
        poll_s: float,
    ) -> None:
        self.key, self.log, self.look_s = key, _LOG, look_s
        self.hook = open_hook()
        self.store: RunStore = None  # type: ignore[assignment]  # set before ready
        self.end_poll = EndPoll(poll_s, end_poll_s)
        self.waiters: set[Waiter] = set()
        self._by_index: dict[int, set[Waiter]] = {}
        self._run_waiters: set[Waiter] = set()  # woken by every commit
        self.committed: set[int] = set()
        self.status: JobStatus | None = None
        self.message = ""
        self.error: RayOrchClusterError | None = None
        self.crashed: RayOrchError | None = None
        self.job_ended = False
        self.driver_ended = False
        self.streaming = False
        #: a listing succeeded (the stream does not announce an earlier job's commits)
        self.listed = False
        self._look_failing_since: float | None = None
        #: the stream closed (Ray closes it once the job ended) or broke
        self.stream_done = False
        self.stream_failed = False
        #: set once the stream brought its first chunk
        self.stream_seen = asyncio.Event()
        #: characters the stream brought so far
        self.received = 0
        self._readers: set[asyncio.Queue[str | None]] = set()
        self._read_now = False
        self._nudge = asyncio.Event()
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(
            self._main(), name=f"rayorch-run-watch-{key.run_id}", context=contextvars.Context()
        )

    # -- waiters -----------------------------------------------------------------------
    def attach(self, index: int | None, poll_s: float, *, run_end: bool) -> Waiter:
        waiter = Waiter(self, index, poll_s, run_end=run_end)
        self.waiters.add(waiter)
        group = self._run_waiters if index is None else self._by_index.setdefault(index, set())
        group.add(waiter)
        if (index is not None and index in self.committed) or self.over():
            waiter.wake()
        if poll_s < self.end_poll.interval:  # its job reads are due sooner
            self._nudge.set()
        return waiter

    def detach(self, waiter: Waiter) -> None:
        self.waiters.discard(waiter)
        self._run_waiters.discard(waiter)
        if waiter.index is not None:
            group = self._by_index.get(waiter.index, set())
            group.discard(waiter)
            if not group:
                self._by_index.pop(waiter.index, None)

    def subscribe(self) -> tuple[int, asyncio.Queue[str | None]] | None:
        """The stream's chunks from now on (None once it is closed: the queue's end),
        with how many characters came before; None when the stream is over."""
        if self.stream_done or self.stream_failed or self.key.job_id is None:
            return None
        chunks: asyncio.Queue[str | None] = asyncio.Queue()
        self._readers.add(chunks)
        return self.received, chunks

    def unsubscribe(self, chunks: asyncio.Queue[str | None]) -> None:
        self._readers.discard(chunks)

    async def ready(self) -> None:
        """Once the store is open; raises what stopped the watcher from opening it."""
        await asyncio.shield(self._ready)

    def over(self) -> bool:
        """Nothing more will come: the job ended, cannot be read, or the store cannot."""
        return self.job_ended or self.error is not None or self.crashed is not None

    def facts(self) -> RunFacts:
        if self.crashed is not None:
            crashed: RayOrchError = self.crashed
            raise crashed
        return RunFacts(len(self.committed), self.status, self.message, self.error, self.job_ended)

    def _wake_all(self) -> None:
        for waiter in self.waiters:
            waiter.wake()

    def _committed(self, indices: set[int]) -> None:
        new = indices - self.committed
        if not new:
            return
        self.committed |= new
        for index in new:
            for waiter in self._by_index.get(index, ()):
                waiter.wake()
        for waiter in self._run_waiters:
            waiter.wake()

    def _driver_ended(self) -> None:
        loop = asyncio.get_running_loop()
        if not self.driver_ended:
            self.driver_ended = True
            self.end_poll.driver_ended(loop.time())
            self._read_now = True
            self._nudge.set()

    # -- the watch ---------------------------------------------------------------------
    async def stop(self) -> None:
        """Stop watching and close the hook."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        with contextlib.suppress(Exception):
            await self.hook.aclose()

    async def _main(self) -> None:
        try:
            await self._watch()
        finally:  # a later trigger starts a new watcher; this one's waiters read its facts
            found = watchers()
            if found.get(self.key) is self:
                del found[self.key]

    async def _watch(self) -> None:
        try:
            self.store = await self.hook.arun_store(self.key.run_store)
        except RayOrchError as exc:
            self._ready.set_exception(exc)
            return
        except Exception as exc:
            self._ready.set_exception(
                StoreError(
                    f"opening run store {self.key.run_store} for run {self.key.run_id}: "
                    f"{type(exc).__name__}: {exc}"
                )
            )
            return
        self._ready.set_result(None)
        stream = None
        try:
            await self._look()  # first, even with the stream: a resumed run's driver does
            # not announce what an earlier job committed
            if self.key.job_id is not None:
                stream = asyncio.create_task(self._follow())
            await self._poll()
        except asyncio.CancelledError:
            raise
        except RayOrchError as exc:  # a store that cannot be read: every trigger raises it
            self.crashed = exc
            self._wake_all()
        except Exception as exc:
            self.crashed = StoreError(
                f"reading run {self.key.run_id} in {self.key.run_store}: {exc}"
            )
            self._wake_all()
        finally:
            if stream is not None:
                if self._readers:  # the job ended: Ray sends the log's last lines, then closes
                    with contextlib.suppress(asyncio.CancelledError):
                        await asyncio.wait({stream}, timeout=STREAM_CLOSE_WAIT_S)
                stream.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await stream

    async def _follow(self) -> None:
        """The job's log stream, read once for the run: its run events wake waiters.
        Once Ray closes it (the job ended) the job is read at once. While it is
        refused or broken the store is listed instead, and the stream is opened again
        once per poll interval (a reopened stream starts from the log's start: what
        came already is skipped)."""
        job_id = str(self.key.job_id)
        events = RunEvents()
        try:
            while True:
                skip = self.received
                try:
                    async for chunk in astream_job_logs(await self.hook.aapi(), job_id):
                        cut = min(skip, len(chunk))
                        skip -= cut
                        if cut < len(chunk):
                            self._chunk(chunk[cut:], events)
                    self._read_now = True  # Ray closed the stream: the job ended
                    return
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # an old Ray, a proxy, a dashboard restarting
                    self.log.debug("no log stream for job %s (%s): listing the store", job_id, exc)
                    if not self.stream_failed:  # the log relays read by offset from now on
                        self.stream_failed = True
                        self._close_readers()
                finally:
                    self.streaming = False
                    self._nudge.set()
                await asyncio.sleep(self.end_poll.interval)
        finally:
            self.stream_done = True
            self._close_readers()

    def _chunk(self, chunk: str, events: RunEvents) -> None:
        self.streaming = True
        self.stream_seen.set()
        self.received += len(chunk)
        for reader in self._readers:
            reader.put_nowait(chunk)
        for event in events.feed(chunk):
            if event["event"] == "microbatch":
                self._committed({int(event["index"])})
            else:
                self._driver_ended()

    def _close_readers(self) -> None:
        for reader in self._readers:
            reader.put_nowait(None)
        self._readers.clear()

    async def _poll(self) -> None:
        loop = asyncio.get_running_loop()
        job_id = self.key.job_id
        read_at: float | None = None  # the last job read
        next_look = loop.time() + self.look_s  # the store was listed just before
        while True:
            if self.waiters:  # the shortest poll interval of the waiters there now
                self.end_poll.interval = min(w.poll_s for w in self.waiters)
            next_job = loop.time() if read_at is None else read_at + self.end_poll.wait(read_at)
            if job_id is not None and (self._read_now or loop.time() >= next_job):
                self._read_now = False
                await self._read_job(job_id)
                if self.over():
                    self._wake_all()
                    return
                read_at = loop.time()
                next_job = read_at + self.end_poll.wait(read_at)
            listing = not self.streaming or not self.listed
            if listing and loop.time() >= next_look:
                await self._look()
                next_look = loop.time() + self.look_s
            wait = next_job if job_id is not None else next_look
            if listing:
                wait = min(wait, next_look)
            await self._pause(wait - loop.time())

    async def _read_job(self, job_id: str) -> None:
        """One job read for the run: Ray's job info when a run waiter needs its
        message, else the status. Any failure of it means the job cannot be read."""
        info = any(w.run_end for w in self.waiters)
        try:
            raw = await (self.hook.aget_job_info if info else self.hook.aget_job_status)(job_id)
            self.status, self.message = job_reading(raw, job_id)
        except RayOrchClusterError as exc:
            self.error = exc
            return
        except Exception as exc:  # an answer the client did not expect: still the job's
            self.error = RayOrchClusterError(
                f"reading Ray job {job_id} failed: {type(exc).__name__}: {exc}"
            )
            return
        self.job_ended = self.status.is_terminal

    async def _look(self) -> None:
        """One listing of the store; a failed one is logged and left to the next look,
        until the listings failed for :data:`STORE_PATIENCE_S` in a row."""
        now = asyncio.get_running_loop().time()
        try:
            await self._list()
        except Exception as exc:
            since = self._look_failing_since
            if since is None:
                self._look_failing_since = since = now
            if now - since >= STORE_PATIENCE_S:
                raise
            (self.log.warning if since == now else self.log.debug)(
                "listing run %s in %s failed (tried again in %g s): %s",
                self.key.run_id,
                self.key.run_store,
                self.look_s,
                exc,
            )
            return
        self._look_failing_since = None
        self.listed = True

    async def _list(self) -> None:
        """The committed microbatches; with a run waiter, also whether the run
        manifest is there (the driver exits next)."""
        run_id = self.key.run_id
        self._committed(set(await asyncio.to_thread(self.store.committed, run_id)))
        if self.driver_ended or not any(w.run_end for w in self.waiters):
            return
        if await asyncio.to_thread(self.store.run_manifest_record, run_id) is not None:
            self._driver_ended()

    async def _pause(self, wait: float) -> None:
        """Up to ``wait`` seconds, cut short by the stream (a run event, its end)."""
        if not self._nudge.is_set() and wait > 0:
            sleep = asyncio.ensure_future(asyncio.sleep(wait))
            nudged = asyncio.ensure_future(self._nudge.wait())
            try:
                await asyncio.wait({sleep, nudged}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (sleep, nudged):
                    task.cancel()
        self._nudge.clear()


#: per event loop (a triggerer runs one; tests run many): the run watchers by key
_REGISTRY: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[RunKey, RunWatcher]] = (
    weakref.WeakKeyDictionary()
)


def watchers() -> dict[RunKey, RunWatcher]:
    """The running event loop's run watchers."""
    return _REGISTRY.setdefault(asyncio.get_running_loop(), {})


@contextlib.asynccontextmanager
async def watching(
    key: RunKey,
    open_hook: Callable[[], RayOrchHook],
    *,
    index: int | None,
    poll_s: float,
    look_s: float,
    end_poll_s: float,
    run_end: bool = False,
) -> AsyncIterator[Waiter]:
    """Attach to the run's watcher (started by the first attach) for the duration;
    the last to leave, by return, error or cancellation, stops it. A watcher leaves the
    registry once it ended (the job's end, an unreadable job or store), so a trigger
    attaching later starts a new one."""
    found = watchers()
    watcher = found.get(key)
    if watcher is None:
        watcher = RunWatcher(key, open_hook, look_s=look_s, end_poll_s=end_poll_s, poll_s=poll_s)
        found[key] = watcher
    waiter = watcher.attach(index, poll_s, run_end=run_end)
    try:
        await watcher.ready()
        yield waiter
    finally:
        watcher.detach(waiter)
        if not watcher.waiters:
            if found.get(key) is watcher:
                del found[key]
            await watcher.stop()
