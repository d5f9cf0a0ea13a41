"""Loopback heads on one machine start one at a time (common.local_heads.start_turn)."""

from __future__ import annotations

import threading

import pytest

from airflow_provider_rayorch.common import local_heads
from airflow_provider_rayorch.exceptions import RayOrchClusterError


@pytest.fixture(autouse=True)
def _heads_dir(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAYORCH_LOCAL_HEADS_DIR", str(tmp_path / "heads"))


@pytest.mark.timeout(60)
def test_a_second_start_waits_for_the_first_to_finish_its_turn() -> None:
    order: list[str] = []
    first_in, release = threading.Event(), threading.Event()

    def first() -> None:
        with local_heads.start_turn(lambda: False):
            order.append("first in")
            first_in.set()
            release.wait(30)
            order.append("first out")

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(30)
    waiting = threading.Thread(target=lambda: _second(order))
    waiting.start()
    waiting.join(1.0)  # it cannot get in while the first holds the turn
    assert order == ["first in"]
    release.set()
    thread.join(30)
    waiting.join(30)
    assert order == ["first in", "first out", "second in"]


def _second(order: list[str]) -> None:
    with local_heads.start_turn(lambda: False):
        order.append("second in")


@pytest.mark.timeout(60)
def test_a_start_killed_while_it_waits_for_its_turn_starts_nothing() -> None:
    holding, release = threading.Event(), threading.Event()

    def holder() -> None:
        with local_heads.start_turn(lambda: False):
            holding.set()
            release.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    holding.wait(30)
    try:
        with (
            pytest.raises(RayOrchClusterError, match="waited for its turn"),
            local_heads.start_turn(lambda: True),
        ):
            pytest.fail("got a turn while another start held it")
    finally:
        release.set()
        thread.join(30)
