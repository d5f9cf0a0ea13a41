"""Recomputing lost payloads from their recipes, with fake actors: no Ray needed."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from ray.exceptions import RayActorError

from airflow_provider_rayorch.rayorch.execution import lineage_recovery
from airflow_provider_rayorch.rayorch.execution.lineage_recovery import (
    MAX_ATTEMPTS,
    LineageRecovery,
    Recipe,
)
from airflow_provider_rayorch.rayorch.execution.protocol import Done, InputsLost
from airflow_provider_rayorch.rayorch.execution.remote_values import Box

if TYPE_CHECKING:
    import pytest

_ids = itertools.count()


class Ref:
    def __init__(self, name: str | None = None) -> None:
        self.name = name or f"ref{next(_ids)}"

    def hex(self) -> str:
        return self.name


class Actor:
    """Records the tasks sent; each call returns fresh (report, values) references."""

    def __init__(self, sent: list[tuple[Any, Any, Any]]) -> None:
        self.sent = sent
        self.run = self

    def remote(self, task: Any) -> tuple[Ref, Ref]:
        report, values = Ref(), Ref()
        self.sent.append((task, report, values))
        return report, values


class Pools:
    def __init__(self, sent: list[Any]) -> None:
        self.actors = {"m#1": Actor(sent), "m#2": Actor(sent)}
        self.module_of = {"m#1": 0, "m#2": 0}


def setup(monkeypatch: pytest.MonkeyPatch) -> tuple[LineageRecovery, list[Any], dict[str, Any]]:
    sent: list[Any] = []
    replies: dict[str, Any] = {}

    def get(ref: Any, *args: Any, **kwargs: Any) -> Any:
        reply = replies[ref.hex()]
        if isinstance(reply, BaseException):
            raise reply
        return reply

    monkeypatch.setattr(lineage_recovery.ray, "get", get)
    return LineageRecovery(Pools(sent)), sent, replies  # type: ignore[arg-type]


def lost_box(recovery: LineageRecovery, name: str) -> Box:
    box = Box(Ref(name), Recipe(0, 5, "render", [[1, 2]]))
    recovery.register(box)
    return box


DONE = Done(None, [None], [None], [None], 0.0)


def test_a_value_without_a_recipe_cannot_be_recovered(monkeypatch: pytest.MonkeyPatch) -> None:
    recovery, sent, _ = setup(monkeypatch)
    waiter = recovery.wait_for("batch 1", ["nobody"])
    assert waiter.failed is not None
    assert "not recoverable" in waiter.failed
    assert sent == []


def test_waiters_of_one_lost_object_share_one_recomputation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recovery, sent, replies = setup(monkeypatch)
    box = lost_box(recovery, "aa")
    first = recovery.wait_for("batch 1", ["aa"])
    second = recovery.wait_for("batch 2", ["aa"])
    assert len(sent) == 1
    task, report, values = sent[0]
    assert (task.call, task.batch, task.columns) == (5, 0, [[1, 2]])  # batch 0: never withdrawn
    assert recovery.busy()
    replies[report.hex()] = DONE
    released = recovery.answered(report)
    assert released == [first, second]
    assert not first.failed
    assert box.ref is values  # the box points at the recomputed object
    assert recovery.boxes[values.hex()] is box
    assert recovery.recomputed == 1
    assert not recovery.busy()


def test_a_recomputation_whose_inputs_are_lost_too_waits_for_theirs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recovery, sent, replies = setup(monkeypatch)
    boxes = [lost_box(recovery, "child"), lost_box(recovery, "parent")]  # held, as by rows
    waiter = recovery.wait_for("batch 1", ["child"])
    _, child_report, _ = sent[0]
    replies[child_report.hex()] = InputsLost(("parent",))
    assert recovery.answered(child_report) == []
    _, parent_report, _ = sent[1]
    replies[parent_report.hex()] = DONE
    assert recovery.answered(parent_report) == []  # the child's recomputation is sent again
    _, child_again, _ = sent[2]
    replies[child_again.hex()] = DONE
    assert recovery.answered(child_again) == [waiter]
    assert not waiter.failed
    assert recovery.recomputed == 2
    assert len(boxes) == 2


def test_a_recomputation_survives_actor_deaths_up_to_its_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recovery, sent, replies = setup(monkeypatch)
    box = lost_box(recovery, "aa")
    waiter = recovery.wait_for("batch 1", ["aa"])
    for attempt in range(MAX_ATTEMPTS):
        _, report, _ = sent[-1]
        replies[report.hex()] = RayActorError()
        released = recovery.answered(report)
        if attempt < MAX_ATTEMPTS - 1:
            assert released == []
    assert released == [waiter]
    assert waiter.failed is not None
    assert "could not recompute" in waiter.failed
    assert len(sent) == MAX_ATTEMPTS
    assert box.recipe is not None
