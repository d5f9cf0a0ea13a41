"""The shared head is started a second time when its first start failed (on a loaded
machine Ray's raylet can abort while ``ray start`` runs); a second failure fails the task."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_rayorch.exceptions import RayOrchClusterError
from airflow_provider_rayorch.operators import _shared_head

if TYPE_CHECKING:
    from pathlib import Path


def starts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, failures: int) -> list[str]:
    """``start_local_head`` failing ``failures`` times, then starting; returns its calls."""
    monkeypatch.setenv("RAYORCH_LOCAL_HEADS_DIR", str(tmp_path / "heads"))
    calls: list[str] = []

    def start_local_head(**kwargs: Any) -> dict[str, Any]:
        calls.append(kwargs["key"])
        if len(calls) <= failures:
            raise RayOrchClusterError("the Ray head did not get its job agent up within 1s")
        return {"address": "http://127.0.0.1:1", "pgid": os.getpgid(0)}

    monkeypatch.setattr(_shared_head, "start_local_head", start_local_head)
    monkeypatch.setattr(_shared_head, "stop_recorded_heads", lambda *a, **k: None)
    monkeypatch.setattr(_shared_head, "_watch_idle", lambda *a, **k: None)
    return calls


def test_a_failed_first_start_is_followed_by_a_second(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = starts(monkeypatch, tmp_path, failures=1)
    head = _shared_head.shared_head(num_cpus=1, timeout=1)
    assert head.started
    assert len(calls) == _shared_head.START_TRIES == 2


def test_the_last_failed_start_fails_the_task(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = starts(monkeypatch, tmp_path, failures=_shared_head.START_TRIES)
    with pytest.raises(RayOrchClusterError, match="job agent"):
        _shared_head.shared_head(num_cpus=1, timeout=1)
    assert len(calls) == _shared_head.START_TRIES
