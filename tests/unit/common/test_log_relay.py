"""The operator's log relay fetches each byte of a growing job log once, through
the Jobs API's log stream, and relays each line once; without the stream it reads
by offset and still relays each line once."""

from __future__ import annotations

from unittest import mock

import pytest

from airflow_provider_rayorch.common.log_relay import LineRelay
from benchmarks.log_relay import FakeJobsApi, relay_once

pytestmark = pytest.mark.timeout(120)

TOTAL, POLLS = 200_000, 20


def _expected(api: FakeJobsApi) -> list[str]:
    return api.log.splitlines()


def test_the_stream_fetches_each_byte_once(tmp_path) -> None:
    api = FakeJobsApi(total=TOTAL, polls=POLLS).start()
    lines: list[str] = []
    try:
        relay_once(api, str(tmp_path), lines)
    finally:
        api.stop()
    assert lines == _expected(api)  # every line, once, in order
    assert api.whole_reads == 0
    assert api.log_bytes == len(api.log.encode())


@pytest.mark.parametrize(
    "follow", [pytest.param(True, id="stream-refused"), pytest.param(False, id="no-stream")]
)
def test_without_the_stream_each_line_is_still_relayed_once(tmp_path, follow: bool) -> None:
    api = FakeJobsApi(total=TOTAL, polls=POLLS, stream=False).start()
    lines: list[str] = []
    try:
        relay_once(api, str(tmp_path), lines, stream=follow)
    finally:
        api.stop()
    assert lines == _expected(api)
    assert api.whole_reads >= 1
    if not follow:  # the whole log on every poll: what the stream saves
        assert api.whole_reads >= POLLS
        assert api.log_bytes > POLLS // 2 * len(api.log)


def test_line_relay_keeps_an_unfinished_line_until_it_ends() -> None:
    log = mock.MagicMock()
    relay = LineRelay(log, "[p]")
    with mock.patch("airflow_provider_rayorch.common.log_relay.relay_line") as relayed:
        relay.feed("a\nb")
        relay.feed_whole("a\nbc\nd")  # the whole log again: only what is new
        relay.flush()
    assert [c.args[2] for c in relayed.call_args_list] == ["a", "bc", "d"]
    assert relay.consumed == len("a\nbc\nd")
    assert list(relay.tail) == ["a", "bc", "d"]


def test_the_job_trigger_streams_every_line_once_to_the_end(tmp_path, monkeypatch) -> None:
    import asyncio

    from airflow_provider_rayorch.common import log_relay
    from airflow_provider_rayorch.triggers.rayorch import RayOrchJobTrigger

    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    api = FakeJobsApi(total=TOTAL, polls=POLLS).start()
    lines: list[str] = []
    monkeypatch.setattr(log_relay, "relay_line", lambda _log, _p, line: lines.append(line))
    trigger = RayOrchJobTrigger(
        job_id="j", run_id="r", run_store=str(tmp_path), address=api.address, poll_interval=0.001
    )

    async def first() -> dict:
        async for event in trigger.run():
            return event.payload
        raise AssertionError("no event")

    try:
        event = asyncio.run(first())
    finally:
        api.stop()
    assert event["job_status"] == "SUCCEEDED"
    assert lines == _expected(api)  # the last lines too: the trigger waited for the stream
    assert api.whole_reads == 0
    assert api.log_bytes == len(api.log.encode())


def test_relayed_lines_are_plain_text() -> None:
    """Ray colours its errors: the task log and the kept tail get the text alone, so
    the driver's error line still parses."""
    log = mock.MagicMock()
    relay = LineRelay(log, "[ray job]")
    relay.feed(
        "\x1b[36m(Recognize pid=7)\x1b[39m ready\n"
        '\x1b[31mRAYORCH_ERROR {"exit_code": 1, "message": "boom"}\x1b[0m\n'
    )
    assert log.info.call_args_list == [
        mock.call("%s %s", "[ray job]", "(Recognize pid=7) ready"),
        mock.call("%s %s", "[ray job]", 'RAYORCH_ERROR {"exit_code": 1, "message": "boom"}'),
    ]
    assert list(relay.tail)[-1] == 'RAYORCH_ERROR {"exit_code": 1, "message": "boom"}'
