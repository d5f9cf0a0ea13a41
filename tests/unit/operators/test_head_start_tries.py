"""A loopback head whose Ray process died while it started is stopped and a new one
begun (on a loaded machine Ray's raylet aborts when its dashboard agent is slow);
other start failures are final, and a last death fails the start."""

from __future__ import annotations

import os
from typing import Any

import pytest

from airflow_provider_rayorch.exceptions import RayOrchClusterError, RayOrchHeadDied
from airflow_provider_rayorch.operators import _head_start, _shared_head

pytestmark = pytest.mark.timeout(60)


def failing_starts(monkeypatch: pytest.MonkeyPatch, *failures: Exception) -> list[dict[str, Any]]:
    """One head's start raising ``failures`` in turn, then starting; returns its calls."""
    calls: list[dict[str, Any]] = []

    def start_once(**kwargs: Any) -> dict[str, Any]:
        calls.append(kwargs)
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]
        return {"address": "http://127.0.0.1:1", "pgid": os.getpgid(0)}

    monkeypatch.setattr(_head_start, "_start_once", start_once)
    return calls


def test_a_head_that_died_starting_is_followed_by_a_new_one(monkeypatch) -> None:
    calls = failing_starts(monkeypatch, RayOrchHeadDied("the raylet exited"))
    head = _head_start.start_local_head(num_cpus=1, timeout=1, key="k")
    assert head["address"] == "http://127.0.0.1:1"
    assert len(calls) == _head_start.START_TRIES == 2
    assert calls[0] == calls[1]  # the same start, asked again


def test_the_last_death_fails_the_start(monkeypatch) -> None:
    deaths = [RayOrchHeadDied(f"death {n}") for n in range(_head_start.START_TRIES)]
    calls = failing_starts(monkeypatch, *deaths)
    with pytest.raises(RayOrchHeadDied, match=f"death {_head_start.START_TRIES - 1}"):
        _head_start.start_local_head(timeout=1)
    assert len(calls) == _head_start.START_TRIES


@pytest.mark.parametrize(
    "failure",
    [
        RayOrchClusterError("killed while its Ray head at http://127.0.0.1:1 was starting"),
        RayOrchClusterError("the Ray head did not get its job agent up within 1s"),
        KeyboardInterrupt(),
    ],
    ids=["killed", "too-slow", "interrupted"],
)
def test_a_start_that_failed_otherwise_is_not_begun_again(monkeypatch, failure) -> None:
    calls = failing_starts(monkeypatch, failure)
    with pytest.raises(type(failure)):
        _head_start.start_local_head(timeout=1)
    assert len(calls) == 1


def test_the_shared_head_starts_through_the_same_tries(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("RAYORCH_LOCAL_HEADS_DIR", str(tmp_path / "heads"))
    calls = failing_starts(monkeypatch, RayOrchHeadDied("the raylet exited"))
    monkeypatch.setattr(_shared_head, "stop_recorded_heads", lambda *a, **k: None)
    monkeypatch.setattr(_shared_head, "_watch_idle", lambda *a, **k: None)
    head = _shared_head.shared_head(num_cpus=1, timeout=1)
    assert head.started
    assert len(calls) == 2


class _Member:
    def __init__(self, name: str) -> None:
        self._name = name

    def name(self) -> str:
        return self._name


def test_a_raylet_counts_as_dead_only_once_it_was_seen(monkeypatch) -> None:
    groups = [["ray", "gcs_server"], ["ray", "gcs_server", "raylet"], ["ray", "gcs_server"]]
    members = iter([[_Member(n) for n in names] for names in groups])
    reaps: list[bool] = []

    def group_members(pgid: int, *, reap: bool = True) -> list[_Member]:
        reaps.append(reap)
        return next(members)

    monkeypatch.setattr(_head_start, "group_members", group_members)
    raylet = _head_start._Raylet(12345)
    assert [raylet.died() for _ in groups] == [False, False, True]
    assert reaps == [False] * 3  # `ray start`'s exit code stays its Popen's to read


def test_looking_at_a_group_without_reaping_leaves_its_leaders_exit_code(tmp_path) -> None:
    """The raylet watch looks with ``reap=False``: ``ray start``'s exit code stays for
    its ``Popen`` (reaped by another ``waitpid``, Python would read it as 0)."""
    import subprocess
    import sys
    import time

    from airflow_provider_rayorch.operators._head_groups import group_members

    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"], start_new_session=True)
    deadline = time.monotonic() + 30
    while _state(proc.pid) != "Z" and time.monotonic() < deadline:  # exited, not reaped
        time.sleep(0.05)
    assert group_members(proc.pid, reap=False) == []  # a zombie is no member
    assert proc.poll() == 3


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()[0]
