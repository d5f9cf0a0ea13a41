"""The pool worker fetches a batch's remote inputs once and names the lost ones.

Runs ``PoolWorker`` as a plain object with ``ray.get`` replaced: no Ray needed.
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import ObjectLostError, RaySystemError

from airflow_provider_rayorch.rayorch.execution import ray_worker
from airflow_provider_rayorch.rayorch.execution.protocol import CallSpec, InputsLost, Raised, Task
from airflow_provider_rayorch.rayorch.execution.ray_worker import PoolWorker
from airflow_provider_rayorch.rayorch.execution.remote_values import (
    Box,
    PackedRefs,
    RemoteValue,
    pack_column,
)
from airflow_provider_rayorch.rayorch.runtime.events import WITHDRAWN
from airflow_provider_rayorch.rayorch.runtime.value_needs import PortNeeds

if TYPE_CHECKING:
    import pytest


class Identity:
    def run(self, items: list[Any]) -> list[Any]:
        return items


class FakeRef:
    def __init__(self, name: str) -> None:
        self.name = name

    def hex(self) -> str:
        return self.name


class FakeStore:
    """``ray.get`` over fake references: counts fetches, fails the ones it is told to."""

    def __init__(self, values: dict[str, Any], errors: dict[str, BaseException]) -> None:
        self.values = values
        self.errors = errors
        self.fetched: list[str] = []

    def get(self, refs: Any, *args: Any, **kwargs: Any) -> Any:
        listed = refs if isinstance(refs, list) else [refs]
        out = []
        for ref in listed:
            self.fetched.append(ref.hex())
            if ref.hex() in self.errors:
                raise self.errors[ref.hex()]
            out.append(self.values[ref.hex()])
        return out if isinstance(refs, list) else out[0]


def run_on(store: FakeStore, monkeypatch: pytest.MonkeyPatch, columns: list[list[Any]]) -> Any:
    monkeypatch.setattr(ray_worker.ray, "get", store.get)
    worker = PoolWorker(Identity, (), {}, calls(7))
    return worker.run(task(7, 1, columns))


def calls(call: int) -> Any:
    return {call: CallSpec("identity", {}, 1, (PortNeeds(),))}


def task(call: int, batch: int, columns: list[list[Any]]) -> Any:
    return Task(call, 1, batch, columns)


def lost_of(reply: Any) -> list[str] | None:
    report, _values = reply
    return list(report.refs) if isinstance(report, InputsLost) else None


def error_of(reply: Any) -> str:
    report, _values = reply
    return report.error if isinstance(report, Raised) else ""


def test_a_lost_input_is_named_and_healthy_inputs_are_fetched_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = FakeStore({"aa": ["x", "y"]}, {"bb": ObjectLostError("bb", None, "")})
    columns = [[RemoteValue(Box(FakeRef("aa")), (0,)), RemoteValue(Box(FakeRef("bb")), (1,))]]
    reply = run_on(store, monkeypatch, columns)
    assert lost_of(reply) == ["bb"]
    assert store.fetched.count("aa") == 1, f"fetches: {store.fetched}"


def test_an_input_that_fails_otherwise_is_not_called_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a lost object is recomputed; any other fetch error fails the batch (under
    its Call's RecoveryPolicy) with that error."""
    store = FakeStore(
        {"aa": ["x"]},
        {"bb": ObjectLostError("bb", None, ""), "cc": RaySystemError("store unreachable")},
    )
    columns = [
        [RemoteValue(Box(FakeRef(name)), (0,)) for name in ("aa", "bb", "cc")],
    ]
    reply = run_on(store, monkeypatch, columns)
    assert lost_of(reply) is None, f"reported lost: {lost_of(reply)}"
    assert "store unreachable" in error_of(reply)


def test_inputs_that_are_all_there_are_fetched_once_each(monkeypatch: pytest.MonkeyPatch) -> None:
    store = FakeStore({"aa": ["x", "y"], "bb": ["z"]}, {})
    columns = [[RemoteValue(Box(FakeRef("aa")), (1,)), RemoteValue(Box(FakeRef("bb")), (0,))]]
    _report, values = run_on(store, monkeypatch, columns)
    assert values == ["y", "z"]
    assert sorted(store.fetched) == ["aa", "bb"]
    assert ray.get is not store.get  # restored by monkeypatch after the test


def test_a_column_of_remote_rows_travels_packed_and_a_mixed_one_as_it_is() -> None:
    aa, bb = Box(FakeRef("aa")), Box(FakeRef("bb"))
    remote = [RemoteValue(aa, (1,)), RemoteValue(bb, (0, 2)), RemoteValue(aa, (0,))]
    packed = pack_column(remote)
    assert isinstance(packed, PackedRefs)
    assert packed.boxes == [aa, bb]
    assert packed.rows == [(0, (1,)), (1, (0, 2)), (0, (0,))]
    mixed = [RemoteValue(aa, (1,)), "plain"]
    assert pack_column(mixed) is mixed
    back = pickle.loads(pickle.dumps(packed))
    assert [(b.ref.hex(), p) for b, p in ((v.box, v.path) for v in back.unpack())] == [
        ("aa", (1,)),
        ("bb", (0, 2)),
        ("aa", (0,)),
    ]


def test_a_packed_column_is_fetched_once_per_object_and_gives_the_rows_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = FakeStore({"aa": ["x", "y"], "bb": [["p", "q", "r"]]}, {})
    aa, bb = Box(FakeRef("aa")), Box(FakeRef("bb"))
    remote = [RemoteValue(aa, (1,)), RemoteValue(bb, (0, 2)), RemoteValue(aa, (0,))]
    _report, values = run_on(store, monkeypatch, [pack_column(remote)])
    assert values == ["y", "r", "x"]
    assert sorted(store.fetched) == ["aa", "bb"]


def test_a_packed_column_with_withdrawn_rows_runs_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = FakeStore({"aa": ["x", "y", "z"]}, {})
    aa = Box(FakeRef("aa"))
    packed = pack_column([RemoteValue(aa, (i,)) for i in range(3)])
    monkeypatch.setattr(ray_worker.ray, "get", store.get)
    worker = PoolWorker(Identity, (), {}, calls(7))
    assert worker.withdraw(1, 4, [1])
    _report, values = worker.run(task(7, 4, [packed]))
    assert values == ["x", WITHDRAWN, "z"]
