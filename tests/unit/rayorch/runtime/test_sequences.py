"""One rule for what ``F.expand`` can split, shared by the local and Ray backends."""

from __future__ import annotations

from collections import OrderedDict, UserList, deque
from typing import Any

import pytest

from airflow_provider_rayorch.rayorch.runtime.lineage import ValueOps
from airflow_provider_rayorch.rayorch.runtime.sequences import (
    children_of,
    expansion_length,
    is_expandable,
)


class LenShapeOnly:
    """Has ``__len__`` and ``shape`` but cannot be indexed: not splittable."""

    shape = (3,)

    def __len__(self) -> int:
        return 3


class ArrayLike:
    """A minimal array-like: ``__len__``, ``__getitem__`` and ``shape``."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items
        self.shape = (len(items),)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: int) -> Any:
        return self._items[i]


class LenGetitemOnly:
    """Indexable with a length but neither a Sequence nor an array-like."""

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int) -> int:
        if i >= 2:
            raise IndexError(i)
        return i


VALUES: list[Any] = [
    [1, 2, 3],
    (1, 2),
    [],
    range(4),
    UserList([5, 6]),
    "abc",
    b"ab",
    bytearray(b"ab"),
    memoryview(b"ab"),
    {"a": 1},
    OrderedDict(a=1),
    {1, 2},
    frozenset({1}),
    deque([1, 2]),  # a MutableSequence
    iter([1, 2]),
    3,
    None,
    ArrayLike([7, 8, 9]),
    LenShapeOnly(),
    LenGetitemOnly(),
]


def _ray_rule(value: Any) -> int | None:
    # Imported here: the module imports ray's exception types (no running Ray needed).
    from airflow_provider_rayorch.rayorch.execution.ray_worker import length_fact

    fact = length_fact(value)
    return fact if isinstance(fact, int) else None


def _local_rule(value: Any) -> int | None:
    elements = ValueOps().split(value)
    return None if elements is None else len(elements)


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_local_and_ray_backends_agree_on_what_expand_can_split(value: Any) -> None:
    pytest.importorskip("ray")
    assert _local_rule(value) == _ray_rule(value), (
        f"{type(value).__name__}: local split gives {_local_rule(value)}, "
        f"the Ray worker's length fact gives {_ray_rule(value)}"
    )


EXPANDABLE = {
    "list",
    "tuple",
    "range",
    "UserList",
    "deque",
    "ArrayLike",
}


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_the_rule_names_sequences_and_array_likes_only(value: Any) -> None:
    expected = type(value).__name__ in EXPANDABLE
    assert is_expandable(value) is expected
    children = children_of(value)
    length = expansion_length(value)
    if expected:
        assert children is not None
        assert length == len(children) == len(value)
        assert children == [value[i] for i in range(len(value))]
    else:
        assert children is None
        assert length is None


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_the_local_backend_splits_by_the_rule(value: Any) -> None:
    assert ValueOps().split(value) == children_of(value)
