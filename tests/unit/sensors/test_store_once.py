"""A sensor in poke mode opens its run store once per task: every poke reads through
the same one."""

from __future__ import annotations

from typing import TYPE_CHECKING
from unittest import mock

from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.sensors.rayorch import RayOrchMicrobatchSensor

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def test_every_poke_reads_through_one_run_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str | None] = []
    real = RayOrchHook.run_store

    def counting(self: RayOrchHook, uri: str | None = None) -> object:
        opened.append(uri)
        return real(self, uri)

    monkeypatch.setattr(RayOrchHook, "run_store", counting)
    sensor = RayOrchMicrobatchSensor(
        task_id="mb",
        microbatch={"index": 1, "first_source": 4, "count": 4},
        run_id="r",
        run_store=str(tmp_path),
        deferrable=False,
    )
    context = {"ti": mock.MagicMock()}
    for _ in range(3):
        assert sensor.poke(context).is_done is False  # nothing committed yet
    assert opened == [str(tmp_path)]
