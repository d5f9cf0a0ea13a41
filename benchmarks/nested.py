"""Workload 3 placeholder (filled in below)."""

from __future__ import annotations

from typing import Any


def run_all(docs: int, *, systems: tuple[str, ...] | None, rounds: int) -> dict[str, Any]:
    return {"note": "not implemented yet", "systems": {}}
