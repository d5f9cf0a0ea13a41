"""Counting live objects of given types, for the tests that bound what a run keeps."""

from __future__ import annotations

import gc
from collections import Counter


def count_live(types: tuple[type, ...], baseline: Counter[str] | None = None) -> Counter[str]:
    """Live objects whose exact type is one of ``types``, by type name, less ``baseline``.

    Compares ``type(o)``, never ``isinstance``: ``isinstance`` reads an object's
    ``__class__``, which some lazy objects in the heap (Airflow's) answer by importing
    a module that may not be installed."""
    gc.collect()
    wanted = frozenset(types)
    found = Counter(t.__name__ for o in gc.get_objects() if (t := type(o)) in wanted)
    return found - (baseline or Counter())
