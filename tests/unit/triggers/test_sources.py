"""RayOrchNewSourcesTrigger: new files of a local glob, emitted once they have landed.

Files are written with an old modification time (landed at first sight) unless a
test says otherwise; the clock is injected. Polls are driven one at a time
(``producer.poll()``) or through an injected pause, never by sleeping. The asset
state store is the real Task SDK accessor, answered in memory (``state_comms``); a
"restart" is a new trigger instance on that store.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from typing import TYPE_CHECKING, Any

import pytest
from airflow.sdk import Asset
from airflow.sdk.execution_time.context import AssetStateStoreAccessor, AssetStateStoreAccessors
from airflow.triggers.base import BaseEventTrigger
from airflow.triggers.shared_stream import AdvanceItem, AdvanceOutcome, SharedStreamManager

from airflow_provider_rayorch.assets.watch_state import COMMITTED_KEY, EMITTED_KEY
from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.triggers import sources
from airflow_provider_rayorch.triggers.sources import (
    QUIET_PERIOD_S,
    NewSourcesProducer,
    RayOrchNewSourcesTrigger,
)

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)

ASSET = "inbox"
CLEAN = AdvanceOutcome(acked=1, failed=0)
TIMED_OUT = AdvanceOutcome(acked=0, failed=1)
NOW = 1_000_000_000.0  # the injected clock's time
OLD = NOW - 60.0  # a modification time well past the quiet period


def _trigger(landing: Path, **kwargs: Any) -> RayOrchNewSourcesTrigger:
    kwargs.setdefault("asset_name", ASSET)
    return RayOrchNewSourcesTrigger(f"{landing}/*.txt", **kwargs)


def _producer(landing: Path, **kwargs: Any) -> NewSourcesProducer:
    return _trigger(landing, **kwargs).producer(
        state=AssetStateStoreAccessor(name=ASSET), clock=lambda: NOW
    )


def _write(path: Path, text: str, mtime: float = OLD) -> str:
    path.write_text(text)
    os.utime(path, (mtime, mtime))
    return str(path)


def _uris(batch: Any) -> list[str]:
    return [f.uri for f in batch.files]


async def _poll_and_ack(producer: NewSourcesProducer, outcome: AdvanceOutcome = CLEAN) -> list[str]:
    batch, token = await producer.poll()
    await producer.advance([AdvanceItem(token, outcome)])
    return _uris(batch)


# -- kwargs -----------------------------------------------------------------------------


def test_serialize_returns_exactly_the_kwargs_and_round_trips(tmp_path: Path) -> None:
    t = _trigger(tmp_path, poll_interval=2.5, max_files_per_event=7)
    path, kwargs = t.serialize()
    assert path == "airflow_provider_rayorch.triggers.sources.RayOrchNewSourcesTrigger"
    assert kwargs == {
        "uri_glob": f"{tmp_path}/*.txt",
        "asset_name": ASSET,
        "poll_interval": 2.5,
        "max_files_per_event": 7,
    }
    module, _, name = path.rpartition(".")
    clone = getattr(importlib.import_module(module), name)(**kwargs)
    assert clone.serialize() == (path, kwargs)
    assert isinstance(clone, BaseEventTrigger)


def test_two_assets_on_one_glob_get_two_trigger_rows(tmp_path: Path) -> None:
    """Airflow identifies an event trigger by its kwargs: the asset name keeps them apart."""
    a = _trigger(tmp_path, asset_name="a").serialize()
    b = _trigger(tmp_path, asset_name="b").serialize()
    assert BaseEventTrigger.hash(*a) != BaseEventTrigger.hash(*b)
    assert BaseEventTrigger.hash(*a) == BaseEventTrigger.hash(
        *_trigger(tmp_path, asset_name="a").serialize()
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"uri_glob": ""}, "uri_glob must be a non-empty", id="empty-glob"),
        pytest.param(
            {"uri_glob": "/data/in/"}, r"no glob pattern.*/data/in/\*\.pdf", id="no-pattern"
        ),
        pytest.param({"asset_name": ""}, "asset_name must be the name of the Asset", id="no-asset"),
        pytest.param({"poll_interval": 0}, "poll_interval must be > 0", id="zero-poll"),
        pytest.param({"poll_interval": "soon"}, "poll_interval must be a number", id="text-poll"),
        pytest.param({"max_files_per_event": 0}, "max_files_per_event must be >= 1", id="zero-cap"),
        pytest.param(
            {"max_files_per_event": 2.5}, "max_files_per_event must be an int", id="float-cap"
        ),
        pytest.param(
            {"max_files_per_event": True}, "max_files_per_event must be an int", id="bool-cap"
        ),
    ],
)
def test_bad_kwargs_are_refused_with_a_clear_message(kwargs: dict[str, Any], message: str) -> None:
    args = {"uri_glob": "/data/in/*.pdf", "asset_name": ASSET, **kwargs}
    with pytest.raises(ValueError, match=message):
        RayOrchNewSourcesTrigger(**args)


# -- polls ------------------------------------------------------------------------------


def test_a_file_untouched_for_the_quiet_period_is_emitted_at_its_first_listing(
    tmp_path: Path, state_comms: Any
) -> None:
    a = _write(tmp_path / "a.txt", "abc", mtime=NOW - QUIET_PERIOD_S)

    async def scenario() -> list[list[str]]:
        p = _producer(tmp_path)
        return [await _poll_and_ack(p), await _poll_and_ack(p)]

    assert asyncio.run(scenario()) == [[a], []]


def test_only_files_matching_the_glob_are_emitted(tmp_path: Path, state_comms: Any) -> None:
    async def scenario() -> list[str]:
        p = _producer(tmp_path)
        _write(tmp_path / "a.txt", "x")
        _write(tmp_path / "b.pdf", "x")
        (tmp_path / "sub").mkdir()
        _write(tmp_path / "sub" / "c.txt", "x")
        return await _poll_and_ack(p)

    assert asyncio.run(scenario()) == [str(tmp_path / "a.txt")]


def test_max_files_per_event_caps_a_batch_and_the_rest_follow(
    tmp_path: Path, state_comms: Any
) -> None:
    names = [_write(tmp_path / f"{i}.txt", str(i)) for i in range(5)]

    async def scenario() -> list[list[str]]:
        p = _producer(tmp_path, max_files_per_event=2)
        return [await _poll_and_ack(p) for _ in range(5)]

    batches = asyncio.run(scenario())
    assert batches == [names[0:2], names[2:4], names[4:5], [], []]


def test_the_watermark_is_written_when_the_event_is_acknowledged(
    tmp_path: Path, state_comms: Any
) -> None:
    a = _write(tmp_path / "a.txt", "abc")

    async def scenario() -> tuple[Any, Any]:
        p = _producer(tmp_path)
        batch, token = await p.poll()
        assert _uris(batch) == [a]
        before = state_comms.value(ASSET, EMITTED_KEY)
        await p.advance([AdvanceItem(token, CLEAN)])
        return before, state_comms.value(ASSET, EMITTED_KEY)

    before, after = asyncio.run(scenario())
    assert before in (None, {})
    assert after == {a: 3}


def test_an_event_that_was_not_persisted_is_offered_again(tmp_path: Path, state_comms: Any) -> None:
    a = _write(tmp_path / "a.txt", "abc")

    async def scenario() -> list[list[str]]:
        p = _producer(tmp_path)
        return [await _poll_and_ack(p, TIMED_OUT) for _ in range(4)]

    # Emitted, never confirmed stored (ack timeout): released, offered at the next poll.
    assert asyncio.run(scenario()) == [[a], [a], [a], [a]]
    assert state_comms.value(ASSET, EMITTED_KEY) in (None, {})


def test_an_in_flight_file_is_not_offered_twice_while_its_event_awaits_persistence(
    tmp_path: Path, state_comms: Any
) -> None:
    a = _write(tmp_path / "a.txt", "abc")

    async def scenario() -> list[list[str]]:
        p = _producer(tmp_path)
        first, token = await p.poll()
        later = [_uris((await p.poll())[0]) for _ in range(3)]
        await p.advance([AdvanceItem(token, CLEAN)])
        return [_uris(first), *later]

    assert asyncio.run(scenario()) == [[a], [], [], []]


def test_committed_files_are_never_emitted_and_leave_the_watermark(
    tmp_path: Path, state_comms: Any
) -> None:
    a = _write(tmp_path / "a.txt", "abc")
    b = _write(tmp_path / "b.txt", "abcd")
    state_comms.rows[(ASSET, COMMITTED_KEY)] = {b: "run-0"}

    async def scenario() -> list[list[str]]:
        p = _producer(tmp_path)
        out = [await _poll_and_ack(p)]
        state_comms.rows[(ASSET, COMMITTED_KEY)] = {a: "run-1", b: "run-0"}  # a's run ended
        out.append(await _poll_and_ack(p))
        return out

    assert asyncio.run(scenario()) == [[a], []]
    assert state_comms.value(ASSET, EMITTED_KEY) == {}


def test_a_listing_error_is_logged_and_the_watch_goes_on(
    tmp_path: Path, state_comms: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    a = _write(tmp_path / "a.txt", "abc")
    real = sources._list_files
    calls = {"n": 0}

    def flaky(uri_glob: str) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError("bucket briefly unreachable")
        return real(uri_glob)

    monkeypatch.setattr(sources, "_list_files", flaky)

    async def scenario() -> list[list[str]]:
        p = _producer(tmp_path)
        return [await _poll_and_ack(p) for _ in range(3)]

    assert asyncio.run(scenario()) == [[], [a], []]
    assert "bucket briefly unreachable" in caplog.text


def test_a_bad_value_in_the_state_store_is_named_with_its_fix(
    tmp_path: Path, state_comms: Any
) -> None:
    state_comms.rows[(ASSET, EMITTED_KEY)] = ["not", "a", "mapping"]
    with pytest.raises(ValueError, match=rf"{EMITTED_KEY}.*asset 'inbox'.*delete the key"):
        asyncio.run(_producer(tmp_path).poll())


# -- restarts ---------------------------------------------------------------------------


def test_a_restarted_trigger_emits_no_file_twice_and_skips_none(
    tmp_path: Path, state_comms: Any
) -> None:
    a = _write(tmp_path / "a.txt", "a")
    b = _write(tmp_path / "b.txt", "bb")

    async def scenario() -> list[list[str]]:
        first = _producer(tmp_path)
        out = [await _poll_and_ack(first)]  # a and b emitted, persisted
        _write(tmp_path / "c.txt", "ccc", mtime=NOW)
        out.append(await _poll_and_ack(first))  # c seen once, still being written
        # The triggerer dies here; a new one starts the trigger again on the same store.
        second = _producer(tmp_path)
        os.utime(tmp_path / "c.txt", (OLD, OLD))  # c done
        _write(tmp_path / "d.txt", "dddd")
        out += [await _poll_and_ack(second) for _ in range(2)]
        return out

    c, d = str(tmp_path / "c.txt"), str(tmp_path / "d.txt")
    assert asyncio.run(scenario()) == [[a, b], [], [c, d], []]
    assert state_comms.value(ASSET, EMITTED_KEY) == {a: 1, b: 2, c: 3, d: 4}


def test_a_restart_before_persistence_emits_the_batch_again(
    tmp_path: Path, state_comms: Any
) -> None:
    """At-least-once: the event may be lost with the triggerer, so it comes again."""
    a = _write(tmp_path / "a.txt", "a")

    async def scenario() -> list[list[str]]:
        first = _producer(tmp_path)
        lost, _token = await first.poll()  # yielded, never confirmed persisted
        second = _producer(tmp_path)
        return [_uris(lost), await _poll_and_ack(second), await _poll_and_ack(second)]

    assert asyncio.run(scenario()) == [[a], [a], []]


# -- the triggerer's paths ---------------------------------------------------------------


def test_run_yields_events_and_keeps_the_watermark_in_the_asset_state_store(
    tmp_path: Path, state_comms: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The standalone path: run() with the accessors the triggerer injects."""
    a = _write(tmp_path / "a.txt", "abc")
    landed: list[str] = []

    async def pause(_seconds: float) -> None:
        if not landed:
            landed.append(_write(tmp_path / "b.txt", "b"))
        await asyncio.sleep(0)

    monkeypatch.setattr(sources, "_pause", pause)
    t = _trigger(tmp_path, poll_interval=60)
    t.asset_state_store = AssetStateStoreAccessors(inlets=[Asset(name=ASSET, uri="file:///in")])

    async def scenario() -> list[dict[str, Any]]:
        payloads = []
        events = t.run()
        for _ in range(2):
            payloads.append((await anext(events)).payload)
        await events.aclose()
        return payloads

    first, second = asyncio.run(scenario())
    assert first == {
        "asset_name": ASSET,
        "uri_glob": f"{tmp_path}/*.txt",
        "files": [{"uri": a, "size": 3}],
    }
    assert [f["uri"] for f in second["files"]] == landed
    assert state_comms.value(ASSET, EMITTED_KEY) == {a: 3}  # b: written after its yield


def test_run_outside_an_asset_watcher_says_what_is_missing(tmp_path: Path) -> None:
    t = _trigger(tmp_path)
    with pytest.raises(UsageError, match=r"asset state store.*AssetWatcher"):
        asyncio.run(anext(t.run()))


def test_an_asset_name_that_is_not_the_watched_asset_is_refused(tmp_path: Path) -> None:
    t = _trigger(tmp_path, asset_name="elsewhere")
    t.asset_state_store = AssetStateStoreAccessors(inlets=[Asset(name=ASSET, uri="file:///in")])
    with pytest.raises(ValueError, match=r"asset_name 'elsewhere'.*inbox"):
        asyncio.run(anext(t.run()))


async def _until(condition: Any, what: str, deadline_s: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    while not condition():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def test_through_the_triggerers_shared_stream_the_watermark_waits_for_persistence(
    tmp_path: Path, state_comms: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Airflow's ack mode, with its real SharedStreamManager: the watermark moves only
    once the triggerer confirms the event is stored (``confirm_persisted``)."""
    a = _write(tmp_path / "a.txt", "abc")

    async def scenario() -> tuple[Any, Any]:
        gate: asyncio.Queue[None] = asyncio.Queue()
        pauses: list[None] = []

        async def pause(_seconds: float) -> None:
            pauses.append(None)
            await gate.get()

        monkeypatch.setattr(sources, "_pause", pause)
        manager = SharedStreamManager(ack_timeout=60.0)
        t = _trigger(tmp_path)
        key = t.shared_stream_key()
        events = t.filter_shared_stream(manager.subscribe(trigger_id=1, trigger=t, key=key))
        event = await asyncio.wait_for(anext(events), 20)
        assert [f["uri"] for f in event.payload["files"]] == [a]
        seq = manager.bind_pending_event(trigger_id=1, key=key)  # as the triggerer does
        assert seq is not None
        moving_on = asyncio.ensure_future(anext(events))  # the filter pulls the next batch
        gate.put_nowait(None)  # the second poll: an empty batch, broadcast before its pause
        await _until(lambda: len(pauses) == 2, "the second poll")
        for _ in range(50):  # let the filter move past the event, and a wrong advance run
            await asyncio.sleep(0)
        unconfirmed = state_comms.value(ASSET, EMITTED_KEY)
        manager.confirm_persisted([seq])
        await _until(lambda: state_comms.value(ASSET, EMITTED_KEY), "the watermark")
        moving_on.cancel()
        await manager.unsubscribe(1, key)
        return unconfirmed, state_comms.value(ASSET, EMITTED_KEY)

    unconfirmed, confirmed = asyncio.run(scenario())
    assert unconfirmed in (None, {})
    assert confirmed == {a: 3}
