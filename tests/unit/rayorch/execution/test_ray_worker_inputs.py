"""A batch's input objects arrive as the task's own arguments, resolved by Ray.

The worker never waits in ``ray.get`` on a reference nested in its task: in a shared
process (a threaded actor) such a wait on a ready input hung workload 1 at 16
accelerators about once in six runs. Here ``PoolWorker`` and ``SharedProcess`` run as
plain objects with ``ray.get`` made to fail, and the driver's side (``send``,
``read_reply``) runs against fake handles: no Ray needed.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from ray.exceptions import ObjectLostError, OwnerDiedError, RayTaskError

from airflow_provider_rayorch.rayorch.execution import ray_worker, task_inputs
from airflow_provider_rayorch.rayorch.execution.protocol import (
    CallSpec,
    Done,
    InputsLost,
    Raised,
    Task,
)
from airflow_provider_rayorch.rayorch.execution.ray_worker import PoolWorker
from airflow_provider_rayorch.rayorch.execution.remote_values import (
    Box,
    Gathered,
    PackedRefs,
    RemoteValue,
    column_boxes,
    pack_column,
)
from airflow_provider_rayorch.rayorch.execution.shared_process import SharedProcess
from airflow_provider_rayorch.rayorch.runtime.events import WITHDRAWN
from airflow_provider_rayorch.rayorch.runtime.value_needs import PortNeeds

pytestmark = pytest.mark.timeout(30)


class Identity:
    def run(self, items: list[Any]) -> list[Any]:
        return items


class FakeRef:
    def __init__(self, name: str) -> None:
        self.name = name

    def hex(self) -> str:
        return self.name


def calls(call: int = 7) -> Any:
    return {call: CallSpec("identity", {}, 1, (PortNeeds(),))}


def task(columns: list[Any], batch: int = 1) -> Task:
    return Task(7, 1, batch, columns)


@pytest.fixture(autouse=True)
def no_nested_get(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that waits on a nested reference fails the test."""

    def get(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a worker called ray.get on a nested reference")

    monkeypatch.setattr(ray_worker.ray, "get", get)


def test_rows_are_taken_from_the_inputs_in_column_boxes_order() -> None:
    aa, bb = Box(FakeRef("aa")), Box(FakeRef("bb"))
    remote = [RemoteValue(aa, (1,)), RemoteValue(bb, (0, 2)), RemoteValue(aa, (0,))]
    columns: list[Any] = [pack_column(remote)]
    assert isinstance(columns[0], PackedRefs)
    assert [b.ref.hex() for b in column_boxes(columns).values()] == ["aa", "bb"]
    reply, values = PoolWorker(Identity, (), {}, calls()).run(
        task(columns), ["x", "y"], [["p", "q", "r"]]
    )
    assert isinstance(reply, Done)
    assert values == ["y", "r", "x"]


def test_gathered_and_mixed_columns_resolve_after_a_pickle_round_trip() -> None:
    """The worker computes the order on the unpickled task: it must be the driver's."""
    aa, bb, cc = (Box(FakeRef(n)) for n in ("aa", "bb", "cc"))
    column = [
        Gathered([RemoteValue(bb, (0,)), RemoteValue(aa, (0,))]),
        "plain",
        RemoteValue(cc, ()),
    ]
    sent = task([column])
    order = [b.ref.hex() for b in column_boxes(sent.columns).values()]
    objects = {"aa": ["A"], "bb": ["B"], "cc": "C"}
    received = pickle.loads(pickle.dumps(sent))
    assert all(b.ref is None for b in column_boxes(received.columns).values())  # no borrow
    _reply, values = PoolWorker(Identity, (), {}, calls()).run(
        received, *(objects[name] for name in order)
    )
    assert values == [["B", "A"], "plain", "C"]


def test_a_wrong_number_of_inputs_fails_the_batch_with_the_counts() -> None:
    columns = [[RemoteValue(Box(FakeRef("aa")), (0,))]]
    reply, _values = PoolWorker(Identity, (), {}, calls()).run(task(columns))
    assert isinstance(reply, Raised)
    assert "0 input objects for 1 references" in reply.error


def test_withdrawn_rows_of_a_packed_column_are_skipped() -> None:
    aa = Box(FakeRef("aa"))
    packed = pack_column([RemoteValue(aa, (i,)) for i in range(3)])
    worker = PoolWorker(Identity, (), {}, calls())
    assert worker.withdraw(1, 4, [1])
    _reply, values = worker.run(task([packed], batch=4), ["x", "y", "z"])
    assert values == ["x", WITHDRAWN, "z"]


def test_a_shared_process_slot_takes_its_inputs_from_the_arguments() -> None:
    process = SharedProcess({key: (Identity, (), {}, calls()) for key in ("render#1", "write#2")})
    columns = [[RemoteValue(Box(FakeRef("aa")), (1,))]]
    reply, values = process.run("write#2", task(columns), ["x", "y"])
    assert isinstance(reply, Done)
    assert values == ["y"]


class FakeHandle:
    class _Run:
        def __init__(self) -> None:
            self.args: tuple[Any, ...] = ()

        def remote(self, *args: Any) -> tuple[str, str]:
            self.args = args
            return "report", "values"

    def __init__(self) -> None:
        self.run = self._Run()


def test_send_passes_each_input_object_once_in_column_boxes_order() -> None:
    aa, bb = Box(FakeRef("aa")), Box(FakeRef("bb"))
    sent = task([[RemoteValue(bb, (0,)), RemoteValue(aa, (0,)), RemoteValue(bb, (1,))]])
    handle = FakeHandle()
    assert task_inputs.send(handle, sent) == ("report", "values")
    assert handle.run.args == (sent, bb.ref, aa.ref)


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(ObjectLostError("aa" * 28, None, ""), id="lost"),
        pytest.param(OwnerDiedError("aa" * 28, None, ""), id="owner-died"),
        pytest.param(RayTaskError("run", "tb", ObjectLostError("aa" * 28, None, "")), id="wrapped"),
    ],
)
def test_an_input_ray_could_not_resolve_reads_as_all_inputs_lost(
    monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    def get(ref: Any) -> Any:
        raise error

    monkeypatch.setattr(task_inputs.ray, "get", get)
    sent = task([[RemoteValue(Box(FakeRef("aa")), (0,)), RemoteValue(Box(FakeRef("bb")), (0,))]])
    reply = task_inputs.read_reply("report", sent.columns)
    assert isinstance(reply, InputsLost)
    assert list(reply.refs) == ["aa", "bb"]


def test_any_other_task_error_is_the_batch_failure_in_plain_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ray could not serialize what the batch returned (or an input's task failed):
    the batch raised, under its Call's RecoveryPolicy; the run goes on."""
    inner = RayTaskError(
        "\x1b[36mray::PoolWorker.run()\x1b[39m", "tb", TypeError("cannot pickle 'generator' object")
    )

    def get(ref: Any) -> Any:
        raise RayTaskError("\x1b[36mray::PoolWorker.run()\x1b[39m", "tb", inner)

    monkeypatch.setattr(task_inputs.ray, "get", get)
    reply = task_inputs.read_reply("report", [["plain"]])
    assert isinstance(reply, Raised)
    assert reply.error == (
        "Ray could not run the batch: TypeError: cannot pickle 'generator' object"
    )
