"""RayOrchNewSourcesTrigger on a local folder: a file still being written is announced
once it has gone untouched for the quiet period, by a re-check of the waiting files
that comes before the next listing. The clock and the pause are injected: a pause
moves the clock, nothing sleeps."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

import pytest
from airflow.sdk.execution_time.context import AssetStateStoreAccessor
from airflow.triggers.shared_stream import AdvanceItem, AdvanceOutcome

from airflow_provider_rayorch.triggers import sources
from airflow_provider_rayorch.triggers.sources import QUIET_PERIOD_S, RayOrchNewSourcesTrigger

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)

ASSET = "inbox"
CLEAN = AdvanceOutcome(acked=1, failed=0)
POLL = 30.0
T0 = 1_000_000_000.0


class _Time:
    """The injected clock; ``pause`` moves it and runs what lands meanwhile."""

    def __init__(self) -> None:
        self.now = T0
        self.pauses: list[float] = []
        self.during_pause: list[Any] = []  # one callable per pause, run before it returns

    def clock(self) -> float:
        return self.now

    async def pause(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds
        if self.during_pause:
            self.during_pause.pop(0)()
        await asyncio.sleep(0)


def _write(path: Path, text: str, mtime: float) -> str:
    path.write_text(text)
    os.utime(path, (mtime, mtime))
    return str(path)


def _stream(landing: Path, time: _Time) -> Any:
    trigger = RayOrchNewSourcesTrigger(f"{landing}/*.txt", asset_name=ASSET, poll_interval=POLL)
    return trigger.producer(
        state=AssetStateStoreAccessor(name=ASSET), pause=time.pause, clock=time.clock
    )


async def _batches(producer: Any, n: int) -> list[list[str]]:
    """The first ``n`` batches of the stream, each acknowledged as stored."""
    out = []
    stream = producer.open_stream()
    for _ in range(n):
        batch, token = await anext(stream)
        await producer.advance([AdvanceItem(token, CLEAN)])
        out.append([f.uri for f in batch.files])
    await stream.aclose()
    return out


def test_a_fresh_file_is_announced_after_the_quiet_period_not_a_poll_interval_later(
    tmp_path: Path, state_comms: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    time = _Time()
    a = _write(tmp_path / "a.txt", "abc", mtime=T0 - 0.5)  # written half a second ago
    listings = {"n": 0}
    real = sources._list_files

    def counted(uri_glob: str) -> Any:
        listings["n"] += 1
        return real(uri_glob)

    monkeypatch.setattr(sources, "_list_files", counted)
    batches = asyncio.run(_batches(_stream(tmp_path, time), 3))
    # The listing sees a still fresh; the re-check (no listing) when its mtime is a
    # quiet period old announces it; the next listing comes a poll interval after the first.
    assert batches == [[], [a], []]
    assert time.pauses == [QUIET_PERIOD_S - 0.5, POLL - (QUIET_PERIOD_S - 0.5)]
    assert listings["n"] == 2


def test_a_file_still_growing_waits_until_a_recheck_finds_it_unchanged(
    tmp_path: Path, state_comms: Any
) -> None:
    time = _Time()
    path = tmp_path / "a.txt"
    a = _write(path, "part", mtime=T0)
    time.during_pause = [
        lambda: _write(path, "part two", mtime=time.now),  # still being written
        lambda: None,  # left alone from here on
    ]
    batches = asyncio.run(_batches(_stream(tmp_path, time), 4))
    assert batches == [[], [], [a], []]
    assert time.pauses[:2] == [QUIET_PERIOD_S, QUIET_PERIOD_S]
    assert sum(time.pauses[:3]) == POLL  # the listing's rhythm is kept


def test_a_file_removed_while_waiting_is_dropped_and_the_next_listing_comes_on_time(
    tmp_path: Path, state_comms: Any
) -> None:
    time = _Time()
    path = tmp_path / "a.txt"
    _write(path, "abc", mtime=T0)
    time.during_pause = [path.unlink]
    batches = asyncio.run(_batches(_stream(tmp_path, time), 3))
    assert batches == [[], [], []]
    assert time.pauses[:2] == [QUIET_PERIOD_S, POLL - QUIET_PERIOD_S]


def test_an_announced_file_is_never_announced_again_by_listings_or_rechecks(
    tmp_path: Path, state_comms: Any
) -> None:
    time = _Time()
    a = _write(tmp_path / "a.txt", "abc", mtime=T0 - 1.0)
    b_path = tmp_path / "b.txt"
    time.during_pause = [lambda: None, lambda: _write(b_path, "bb", mtime=time.now)]
    batches = asyncio.run(_batches(_stream(tmp_path, time), 6))
    # listing (a waits), re-check (a), listing (b waits), re-check (b), listing, listing
    assert batches == [[], [a], [], [str(b_path)], [], []]


def test_a_failed_recheck_is_logged_and_the_file_comes_at_the_next_listing(
    tmp_path: Path, state_comms: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    time = _Time()
    a = _write(tmp_path / "a.txt", "abc", mtime=T0)

    def unreachable(uri_glob: str, uris: list[str]) -> Any:
        raise OSError("mount briefly gone")

    monkeypatch.setattr(sources, "_stat_files", unreachable)
    batches = asyncio.run(_batches(_stream(tmp_path, time), 3))
    assert batches == [[], [], [a]]
    assert time.pauses[:2] == [QUIET_PERIOD_S, POLL - QUIET_PERIOD_S]  # no re-check loop
    assert "mount briefly gone" in caplog.text
