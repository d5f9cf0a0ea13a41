"""The one rule for what ``F.expand`` can split, shared by every backend.

Strings, bytes-likes and mappings are not sequences (splitting them is almost
always a mistake); any ``collections.abc.Sequence`` is; so is an array-like
that has ``__len__``, ``__getitem__`` and ``shape`` (numpy arrays, tensors).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["children_of", "expansion_length", "is_expandable"]

_ATOMIC = (str, bytes, bytearray, memoryview, Mapping)


def is_expandable(value: Any) -> bool:
    """Whether ``F.expand`` splits ``value`` into children."""
    if isinstance(value, _ATOMIC):
        return False
    if isinstance(value, Sequence):
        return True
    return hasattr(value, "__len__") and hasattr(value, "__getitem__") and hasattr(value, "shape")


def children_of(value: Any) -> list[Any] | None:
    """The elements ``F.expand`` makes children of, or None when not expandable."""
    if not is_expandable(value):
        return None
    if isinstance(value, Sequence):
        return list(value)
    return [value[i] for i in range(len(value))]


def expansion_length(value: Any) -> int | None:
    """How many children ``F.expand`` makes of ``value``, or None when not expandable."""
    return len(value) if is_expandable(value) else None
