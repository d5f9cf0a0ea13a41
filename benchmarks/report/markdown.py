"""Markdown primitives the report's sections share: a number cell and a table."""

from __future__ import annotations

from typing import Any

__all__ = ["fmt", "table"]


def fmt(x: Any, digits: int = 2, pct: bool = False) -> str:
    """One table cell: ``-`` for a missing figure, else ``digits`` places (or a percentage)."""
    if x is None:
        return "-"
    if pct:
        return f"{100 * x:.{max(0, digits - 1)}f}%"
    return f"{x:.{digits}f}"


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table followed by its blank line."""
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return [*out, ""]
