"""The driver's run events read from a streamed log, without relaying it."""

from __future__ import annotations

import json

from airflow_provider_rayorch.common.log_relay import RunEvents, run_event


def _line(event: dict) -> str:
    return f"RAYORCH_EVENT {json.dumps(event)}"


def test_run_events_come_from_complete_lines_split_anywhere() -> None:
    log = "\n".join(
        [
            "plain output",
            _line({"event": "microbatch", "index": 3, "state": "success"}),
            _line({"event": "progress", "done": 1}),
            "\x1b[32m" + _line({"event": "end", "run_id": "r"}),
            "",
        ]
    )
    events, found = RunEvents(), []
    for cut in range(0, len(log), 7):
        found += events.feed(log[cut : cut + 7])
    assert [(e["event"], e.get("index")) for e in found] == [("microbatch", 3), ("end", None)]


def test_an_unfinished_last_line_waits_for_its_end() -> None:
    events = RunEvents()
    assert events.feed(_line({"event": "end"})) == []
    assert events.feed("\n") == [{"event": "end"}]


def test_lines_that_only_look_like_events_are_not_events() -> None:
    assert run_event("RAYORCH_EVENT {not json") is None
    assert run_event("RAYORCH_EVENT [1, 2]") is None
    assert run_event("said RAYORCH_EVENT nothing") is None
