"""The tests' and benchmarks' own local Ray: a start that timed out is tried again."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_rayorch.operators._embedded import RAY_START_TIMED_OUT
from benchmarks import local_ray

ray = pytest.importorskip("ray")


class FakeStarts:
    """``ray.init`` failing with the given errors, then starting."""

    def __init__(self, errors: list[Exception]) -> None:
        self.errors, self.inits, self.shutdowns = list(errors), 0, 0

    def init(self, **kwargs: Any) -> None:
        self.inits += 1
        if self.errors:
            raise self.errors.pop(0)

    def shutdown(self) -> None:
        self.shutdowns += 1


def fake(monkeypatch: pytest.MonkeyPatch, errors: list[Exception]) -> FakeStarts:
    starts = FakeStarts(errors)
    monkeypatch.setattr(ray, "init", starts.init)
    monkeypatch.setattr(ray, "shutdown", starts.shutdown)
    return starts


def test_a_start_that_timed_out_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    starts = fake(monkeypatch, [Exception(f"{RAY_START_TIMED_OUT}. overloaded")])
    local_ray.init_own_ray()
    assert (starts.inits, starts.shutdowns) == (2, 1)


def test_the_last_timed_out_start_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    errors = [Exception(RAY_START_TIMED_OUT) for _ in range(local_ray.START_TRIES)]
    starts = fake(monkeypatch, errors)
    with pytest.raises(Exception, match=RAY_START_TIMED_OUT):
        local_ray.init_own_ray()
    assert starts.inits == local_ray.START_TRIES


def test_another_start_error_raises_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    starts = fake(monkeypatch, [ValueError("bad runtime_env")])
    with pytest.raises(ValueError, match="bad runtime_env"):
        local_ray.init_own_ray()
    assert starts.inits == 1
