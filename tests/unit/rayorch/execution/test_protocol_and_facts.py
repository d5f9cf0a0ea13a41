"""Typed worker messages and the facts workers report, without Ray."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from airflow_provider_rayorch.rayorch.execution.facts import fact_tree, length_fact
from airflow_provider_rayorch.rayorch.execution.protocol import (
    CallSpec,
    Done,
    InputsLost,
    Raised,
    Rejected,
    Running,
    Task,
)
from airflow_provider_rayorch.rayorch.runtime.events import WITHDRAWN
from airflow_provider_rayorch.rayorch.runtime.value_needs import PortNeeds


@pytest.mark.parametrize(
    "message",
    [
        Task(3, 2, 7, [[1, 2]]),
        Done([None, WITHDRAWN], [[2, "str"]], [None], [None], 0.5),
        Raised("ValueError: x", 0.1, ValueError("x")),
        Rejected("wrong length", 0.2),
        InputsLost(("ab", "cd")),
        Running(2, 7, 1.5),
        CallSpec("page", {"dpi": 3}, 2, (PortNeeds(1, frozenset({0})), PortNeeds())),
    ],
)
def test_messages_pickle_to_equal_values(message: Any) -> None:
    back = pickle.loads(pickle.dumps(message))
    assert type(back) is type(message)
    assert repr(back) == repr(message)


def test_length_facts_follow_the_one_expand_rule() -> None:
    assert length_fact([1, 2, 3]) == 3
    assert length_fact((1,)) == 1
    assert length_fact("abc") == "str"
    assert length_fact({"a": 1}) == "dict"
    assert length_fact(7) == "int"


def test_fact_trees_reach_the_levels_asked_for() -> None:
    needs = PortNeeds(lengths=2, truths=frozenset({1}))
    assert fact_tree([[1, 2], [], "x"], needs) == [
        [2, True, None],
        [0, False, None],
        ["str", True, None],
    ]
    assert fact_tree([[1]], PortNeeds(1)) is None
    assert fact_tree(5, needs) is None
