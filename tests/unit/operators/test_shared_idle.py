"""The shared head's idle stop (operators/_shared_idle.py), on a stand-in head: a
process in a session of its own recorded as the machine's shared head."""

from __future__ import annotations

import subprocess
import time
from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.common import local_heads
from airflow_provider_rayorch.operators import _shared_idle

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def head(tmp_path: Path, monkeypatch) -> Iterator[subprocess.Popen[bytes]]:
    """``sleep`` in a session of its own, recorded (started, and as the shared head) the
    way ``shared_head`` records a head it started."""
    monkeypatch.setenv("RAYORCH_LOCAL_HEADS_DIR", str(tmp_path / "heads"))
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    temp_dir = tmp_path / "rayh-standin"
    temp_dir.mkdir()
    address = "http://127.0.0.1:9"
    local_heads.note_started(
        proc.pid, temp_dir=str(temp_dir), address=address, key=local_heads.SHARED_KEY
    )
    local_heads.write_shared(
        {
            "address": address,
            "pgid": proc.pid,
            "temp_dir": str(temp_dir),
            "token_path": str(temp_dir / "auth_token"),
            "start": local_heads.process_start(proc.pid),
            "used_at": 1000.0,
        }
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_an_idle_head_is_stopped_and_forgotten(head, monkeypatch) -> None:
    monkeypatch.setattr(_shared_idle, "busy", lambda record, client=None: False)
    assert _shared_idle.check_once(head.pid, idle_s=60, now=1100.0) is False
    assert head.wait(15) is not None
    assert local_heads.read_shared() is None
    assert local_heads.started_heads() == []


def test_a_head_used_lately_is_kept(head, monkeypatch) -> None:
    monkeypatch.setattr(_shared_idle, "busy", lambda record, client=None: False)
    assert _shared_idle.check_once(head.pid, idle_s=600, now=1100.0) is True
    assert head.poll() is None
    assert local_heads.read_shared()["pgid"] == head.pid


def test_a_busy_head_is_kept_and_its_use_recorded(head, monkeypatch) -> None:
    monkeypatch.setattr(_shared_idle, "busy", lambda record, client=None: True)
    assert _shared_idle.check_once(head.pid, idle_s=60, now=5000.0) is True
    assert head.poll() is None
    assert local_heads.read_shared()["used_at"] == 5000.0


def test_a_head_that_does_not_answer_counts_as_busy(head) -> None:
    """Nothing listens at the stand-in's address: the watch keeps the head."""
    assert _shared_idle.busy(local_heads.read_shared() or {}) is True


def test_the_watch_ends_when_its_head_is_replaced(head, monkeypatch) -> None:
    monkeypatch.setattr(_shared_idle, "busy", lambda record, client=None: False)
    local_heads.write_shared({**(local_heads.read_shared() or {}), "pgid": 1})
    assert _shared_idle.check_once(head.pid, idle_s=0, now=time.time()) is False
    assert head.poll() is None, "a watch stopped a head that is no longer the shared one"


def test_the_watch_ends_when_its_head_is_gone(head) -> None:
    """Long before its first look at the jobs (600 s): the module's timeout bounds it."""
    head.kill()
    head.wait()
    assert _shared_idle.main([str(head.pid), "600"]) == 0
