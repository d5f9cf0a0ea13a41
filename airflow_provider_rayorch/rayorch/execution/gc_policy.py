"""Garbage-collector tuning while a run builds lineage.

A run allocates millions of small, long-lived objects (Entities, Grains).
CPython's full collections then rescan the whole heap again and again and
cost more than the scheduling itself. While a run is driven, full collections
are made rare; young collections stay as they are, and the core frees each
finished microbatch's lineage by reference counting (it breaks the cycles).
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["rare_full_collections"]

#: Young collections between two full ones while a run is driven (CPython's default: 10).
FULL_COLLECTION_EVERY = 10_000


@contextmanager
def rare_full_collections() -> Iterator[None]:
    """Within the block, full collections run ~1000x less often; restored after."""
    first, second, third = gc.get_threshold()
    gc.set_threshold(first, second, max(third, FULL_COLLECTION_EVERY))
    try:
        yield
    finally:
        gc.set_threshold(first, second, third)
