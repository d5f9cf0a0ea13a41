"""A shared process fetches one batch's inputs at a time.

Threads of one Ray worker that wait in ``ray.get`` together can hang
(ray-project/ray#54007): in the suite a ``write`` slot of the default shared process
waited forever on an input that was ready (no "still not local" warning; every
page-model worker idle; 2 hangs in about 10 runs of workload 1 at 16 accelerators).
Its slots therefore share one fetch lock, as a process of its own fetches one batch's
inputs at a time. Runs ``SharedProcess`` as a plain object with ``ray.get`` replaced:
no Ray needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_rayorch.rayorch.execution import ray_worker
from airflow_provider_rayorch.rayorch.execution.protocol import CallSpec, Done, Task
from airflow_provider_rayorch.rayorch.execution.remote_values import Box, RemoteValue
from airflow_provider_rayorch.rayorch.execution.shared_process import SharedProcess
from airflow_provider_rayorch.rayorch.runtime.value_needs import PortNeeds

if TYPE_CHECKING:
    from collections.abc import Callable

pytestmark = pytest.mark.timeout(30)


class Identity:
    def run(self, items: list[Any]) -> list[Any]:
        return items


class FakeRef:
    def hex(self) -> str:
        return "aa"


def _process() -> SharedProcess:
    calls = {7: CallSpec("identity", {}, 1, (PortNeeds(),))}
    return SharedProcess({key: (Identity, (), {}, calls) for key in ("render#1", "write#2")})


def _fetching(seen: Callable[[], bool], record: list[bool]) -> Callable[..., Any]:
    def get(ref: Any, *args: Any, **kwargs: Any) -> Any:
        record.append(seen())
        return ["x"]

    return get


def test_the_slots_of_a_process_share_one_fetch_lock() -> None:
    process = _process()
    render, write = process.slots["render#1"], process.slots["write#2"]
    assert render.fetch_lock is write.fetch_lock


def test_inputs_are_fetched_under_the_process_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    process = _process()
    lock = process.slots["write#2"].fetch_lock
    held: list[bool] = []
    monkeypatch.setattr(ray_worker.ray, "get", _fetching(lock.locked, held))
    reply, values = process.run("write#2", Task(7, 1, 1, [[RemoteValue(Box(FakeRef()), (0,))]]))
    assert isinstance(reply, Done)
    assert values == ["x"]
    assert held == [True]
    assert not lock.locked()


def test_a_process_of_its_own_has_a_lock_of_its_own() -> None:
    calls = {7: CallSpec("identity", {}, 1, (PortNeeds(),))}
    one = ray_worker.PoolWorker(Identity, (), {}, calls)
    other = ray_worker.PoolWorker(Identity, (), {}, calls)
    assert one.fetch_lock is not other.fetch_lock
