"""Watch a glob for new files and announce them as asset events (an ``AssetWatcher``).

A file is announced once it has landed, at most ``max_files_per_event`` per event:
on an object store (S3, GCS, Azure) at its first listing; elsewhere once it has gone
untouched for ``QUIET_PERIOD_S`` (``assets/stable_files.py``). A file still being
written is re-checked on its own (one stat of the waiting files) when its quiet
period ends, not at the next listing ``poll_interval`` later.

The watermark (the files Airflow has stored an event for) lives in the asset state
store, so a restarted triggerer goes on where the last one stopped.

Under Airflow 3.3's triggerer the trigger runs in the shared-stream *ack mode*: the
poll loop is a ``SharedStreamProducer``, and its ``advance`` writes the watermark
only once the triggerer confirms that the event is in the metadata database. A
crash before that confirmation loses at most the in-memory event, and the files
are announced again: delivery is at-least-once. The DAG's last task records what
it committed (``airflow_provider_rayorch.assets.new_sources.record_committed``);
those files are never announced again and the helper drops repeats.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import TYPE_CHECKING, Any, Protocol

from airflow.triggers.base import BaseEventTrigger, TriggerEvent
from airflow.triggers.shared_stream import AdvanceItem, AdvanceOutcome, SharedStreamProducer

from airflow_provider_rayorch.assets.stable_files import QUIET_PERIOD_S, StableFileSelector
from airflow_provider_rayorch.assets.watch_state import (
    COMMITTED_KEY,
    EMITTED_KEY,
    ListedFile,
    NewSourcesBatch,
    complete_on_sight,
    decode_committed,
    decode_emitted,
    has_glob_pattern,
)
from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.runs.glob_syntax import split_glob_query
from airflow_provider_rayorch.triggers._fields import DeclaredFields

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Sequence

__all__ = ["QUIET_PERIOD_S", "NewSourcesProducer", "RayOrchNewSourcesTrigger"]

log = logging.getLogger(__name__)

#: How the standalone ``run()`` path resolves an event: handed to the triggerer.
_HANDED_OVER = AdvanceOutcome(acked=1, failed=0)


class AsyncStateStore(Protocol):
    """The part of Airflow's per-asset state store accessor the trigger uses."""

    async def aget(self, key: str, default: Any = None) -> Any: ...

    async def aset(self, key: str, value: Any) -> None: ...


def _list_files(uri_glob: str) -> list[ListedFile]:
    """List in a worker thread; pyarrow is imported there, off the triggerer's loop."""
    from airflow_provider_rayorch.assets.listing import list_files

    return list_files(uri_glob)


def _stat_files(uri_glob: str, uris: list[str]) -> list[ListedFile]:
    """Re-check the waiting files in a worker thread."""
    from airflow_provider_rayorch.assets.listing import stat_files

    return stat_files(uri_glob, uris)


async def _pause(seconds: float) -> None:
    await asyncio.sleep(seconds)


class NewSourcesProducer(SharedStreamProducer):
    """The poll loop: one ``poll()`` (a listing) per interval, and a ``recheck()`` of the
    files still landing when their quiet period ends; ``advance`` moves the watermark.

    Files in an event not yet resolved are *in flight*: not offered again meanwhile.
    An event that is not confirmed stored (ack timeout) releases its files, which
    are then offered again.
    """

    def __init__(
        self,
        *,
        uri_glob: str,
        asset_name: str,
        poll_interval: float,
        max_files_per_event: int,
        state: AsyncStateStore,
        pause: Callable[[float], Awaitable[None]] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.uri_glob = uri_glob
        self.asset_name = asset_name
        self.poll_interval = poll_interval
        self.max_files_per_event = max_files_per_event
        self._state = state
        self._pause = pause
        self._clock = clock or time.time
        self._selector = StableFileSelector(complete_on_sight=complete_on_sight(uri_glob))
        self._emitted: dict[str, int] | None = None
        self._in_flight: dict[str, ListedFile] = {}
        self._dirty = False

    async def poll(self) -> tuple[NewSourcesBatch, tuple[ListedFile, ...]]:
        """One listing: ``(batch, token)``; ``token`` goes back to ``advance`` with the outcome."""
        return await self._look(whole=True)

    async def recheck(self) -> tuple[NewSourcesBatch, tuple[ListedFile, ...]]:
        """Stat only the files still landing; those that have landed make the batch."""
        return await self._look(whole=False)

    def next_recheck(self) -> float | None:
        """When (by the clock) a ``recheck`` could find a waiting file landed; None: none waits."""
        return self._selector.next_due()

    async def _look(self, *, whole: bool) -> tuple[NewSourcesBatch, tuple[ListedFile, ...]]:
        if self._emitted is None:
            self._emitted = decode_emitted(await self._state.aget(EMITTED_KEY), self.asset_name)
        emitted = self._emitted
        committed = decode_committed(await self._state.aget(COMMITTED_KEY), self.asset_name)
        try:
            if whole:
                listing = await asyncio.to_thread(_list_files, self.uri_glob)
            else:
                waiting = self._selector.waiting()
                listing = await asyncio.to_thread(_stat_files, self.uri_glob, waiting)
        except Exception as exc:  # a flaky bucket must not end the watch
            log.warning("Listing %s failed, trying again next poll: %s", self.uri_glob, exc)
            if not whole:  # no re-check again before the next listing
                self._selector.forget_waiting()
            return NewSourcesBatch(self.asset_name, self.uri_glob), ()
        if whole:
            listed = {f.uri for f in listing}
            for uri in [u for u in emitted if u in committed or u not in listed]:
                del emitted[uri]  # committed files stay known through COMMITTED_KEY
                self._dirty = True
        known = emitted.keys() | committed.keys() | self._in_flight.keys()
        landed = self._selector.select(listing, known, self._clock())
        batch = tuple(landed[: self.max_files_per_event])
        self._in_flight.update((f.uri, f) for f in batch)
        return NewSourcesBatch(self.asset_name, self.uri_glob, batch), batch

    async def open_stream(self) -> AsyncIterator[tuple[NewSourcesBatch, Any]]:
        """Yield one batch per listing, and one per re-check of files still landing that
        falls before the next listing; empty ones too: they let the previous event resolve."""
        pause = self._pause or _pause
        while True:
            yield await self.poll()
            next_listing = self._clock() + self.poll_interval
            while (due := self.next_recheck()) is not None and due < next_listing:
                await pause(max(0.0, due - self._clock()))
                yield await self.recheck()
            await pause(min(self.poll_interval, max(0.0, next_listing - self._clock())))

    async def advance(self, batch: Sequence[AdvanceItem]) -> None:
        """Record the files of stored events in the watermark; release the others."""
        emitted = self._emitted if self._emitted is not None else {}
        for item in batch:
            files: tuple[ListedFile, ...] = item.broker_payload or ()
            for f in files:
                self._in_flight.pop(f.uri, None)
            if not files:
                continue
            if item.outcome.is_clean:
                emitted.update((f.uri, f.size) for f in files)
                self._dirty = True
            else:
                log.warning(
                    "The event for %d file(s) of %s was not confirmed stored (%s): they are "
                    "offered again",
                    len(files),
                    self.asset_name,
                    item.outcome,
                )
        if self._dirty:
            await self._state.aset(EMITTED_KEY, dict(sorted(emitted.items())))
            self._dirty = False


def _positive_number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{name} must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{name} must be > 0 seconds, got {value!r}")
    return float(value)


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{name} must be an int, got {value!r}")
    if value < 1:
        raise UsageError(f"{name} must be >= 1, got {value}")
    return value


class RayOrchNewSourcesTrigger(DeclaredFields, BaseEventTrigger):
    """Announce the files of ``uri_glob`` that have not been announced yet.

    Event payload: ``{"asset_name", "uri_glob", "files": [{"uri", "size"}, ...]}``;
    a run reads it with ``airflow_provider_rayorch.assets.new_sources.new_sources``.

    :param uri_glob: a ``pyarrow.fs`` glob: ``/data/in/*.pdf``, ``s3://bucket/in/**/*.pdf``,
        ``gs://...``. Matches exactly what ``RayOrchOperator(sources=uri_glob)`` expands.
    :param asset_name: the name of the Asset whose watcher this is. It keeps the
        watermark of each asset apart, and two assets with otherwise equal triggers
        would share one trigger row without it.
    :param poll_interval: seconds between listings. A listed file is announced at once
        on an object store; elsewhere once untouched for ``QUIET_PERIOD_S`` (a file
        still being written is re-checked then, without waiting for the next listing).
    :param max_files_per_event: at most this many files per event; the rest follow.
    """

    serialized = ("uri_glob", "asset_name", "poll_interval", "max_files_per_event")

    def __init__(
        self,
        uri_glob: str,
        *,
        asset_name: str,
        poll_interval: float = 30.0,
        max_files_per_event: int = 1000,
    ) -> None:
        super().__init__()
        if not isinstance(uri_glob, str) or not uri_glob.strip():
            raise UsageError(f"uri_glob must be a non-empty glob URI, got {uri_glob!r}")
        if not has_glob_pattern(uri_glob):
            path, query = split_glob_query(uri_glob)
            example = f"{path.rstrip('/')}/*.pdf" + (f"?{query}" if query else "")
            raise UsageError(
                f"uri_glob {uri_glob!r} has no glob pattern: name the files to watch, "
                f"e.g. {example}"
            )
        if not isinstance(asset_name, str) or not asset_name:
            raise UsageError(
                "asset_name must be the name of the Asset this trigger watches for "
                f"(Asset(name, watchers=[AssetWatcher(...)])), got {asset_name!r}"
            )
        self.uri_glob = uri_glob
        self.asset_name = asset_name
        self.poll_interval = _positive_number("poll_interval", poll_interval)
        self.max_files_per_event = _count("max_files_per_event", max_files_per_event)

    # -- the asset state store ----------------------------------------------------------
    def _state(self) -> AsyncStateStore:
        """This asset's accessor among those the triggerer injected."""
        if self.asset_state_store is None:
            raise UsageError(
                f"RayOrchNewSourcesTrigger for asset {self.asset_name!r} has no asset state "
                "store: the triggerer gives one only to a trigger that watches an asset, "
                "Asset(name, watchers=[AssetWatcher(name=..., trigger=RayOrchNewSourcesTrigger"
                "(...))]) on Airflow >= 3.3. It cannot serve as a deferred task's trigger."
            )
        from airflow.sdk import Asset

        try:
            accessor: AsyncStateStore = self.asset_state_store[Asset.ref(name=self.asset_name)]
        except KeyError:
            raise UsageError(
                f"asset_name {self.asset_name!r} is not the asset this trigger watches "
                f"({self.asset_state_store!r}): pass asset_name=<the watching Asset's name>"
            ) from None
        return accessor

    def producer(
        self,
        state: AsyncStateStore | None = None,
        pause: Callable[[float], Awaitable[None]] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> NewSourcesProducer:
        """The poll loop on ``state`` (default: this asset's accessor from the triggerer);
        ``pause`` and ``clock`` (wall-clock seconds, compared with file mtimes) are
        ``asyncio.sleep`` and ``time.time`` unless given."""
        return NewSourcesProducer(
            uri_glob=self.uri_glob,
            asset_name=self.asset_name,
            poll_interval=self.poll_interval,
            max_files_per_event=self.max_files_per_event,
            state=state if state is not None else self._state(),
            pause=pause,
            clock=clock,
        )

    # -- the triggerer's shared-stream (ack mode) path ------------------------------------
    def shared_stream_key(self) -> Hashable:
        """One poll loop per asset and glob (its own watermark), in ack mode."""
        _, kwargs = self.serialize()
        return ("rayorch-new-sources", *sorted(kwargs.items()))

    @classmethod
    def create_shared_stream_producer(cls, kwargs: dict[str, Any]) -> NewSourcesProducer:
        from airflow.sdk.execution_time.context import AssetStateStoreAccessor

        trigger = cls(**kwargs)
        return trigger.producer(state=AssetStateStoreAccessor(name=trigger.asset_name))

    async def filter_shared_stream(
        self, shared_stream: AsyncIterator[Any]
    ) -> AsyncIterator[TriggerEvent]:
        if self.asset_state_store is not None:
            self._state()  # refuses an asset_name that is not the watched asset
        async for batch in shared_stream:
            if batch.files:
                yield TriggerEvent(batch.to_payload())

    # -- the standalone path ------------------------------------------------------------
    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Without ack mode the watermark moves once the event is handed over.

        A triggerer killed between that hand-over and the event's commit to the
        database loses the event: Airflow 3.3's triggerer takes the ack-mode path.
        """
        producer = self.producer()
        async for batch, token in producer.open_stream():
            if batch.files:
                yield TriggerEvent(batch.to_payload())
            await producer.advance([AdvanceItem(token, _HANDED_OVER)])
