"""The goals of the Airflow-path page (docs/benchmarks/airflow-path.md): issue 29's
ratios against the two Ray Data ``@task``s, and the event-driven latency goals."""

from __future__ import annotations

from typing import Any

from .markdown import fmt, table

__all__ = ["event_goals", "run_goals"]

_MET = {True: "met", False: "**missed**", None: "-"}


def _cell(row: dict[str, Any]) -> str:
    """``0.72x (<= 0.8) met``: the ratio, its target, the verdict."""
    ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}x"
    return f"{ratio} (<= {row['target']:g}) {_MET[row['met']]}"


def run_goals(r: dict[str, Any]) -> list[str]:
    """The goals table: one line per provider variant, one column per figure and
    baseline (medians over medians), each cell the ratio, its target and the verdict."""
    rows = list(r.get("goals") or [])
    if not rows:
        return []
    columns = list(dict.fromkeys((g["figure"], g["baseline"]) for g in rows))
    labels = {"total_s": "run success", "trigger_to_first_commit_s": "first commit"}
    by = {(g["variant"], g["figure"], g["baseline"]): g for g in rows}
    lines = [
        "## Goals (issue 29): trigger -> run success and -> first commit, over the Ray Data tasks",
        "",
        "Each cell: our median over the `@task`'s median from the same rounds, the target, "
        "the verdict. Every operator variant is held to the operator's targets, every "
        "pattern variant to the pattern's.",
        "",
    ]
    lines += table(
        ["variant", *(f"{labels.get(f, f)} / {b}" for f, b in columns)],
        [[v, *(_cell(by[(v, f, b)]) if (v, f, b) in by else "-" for f, b in columns)]
         for v in dict.fromkeys(g["variant"] for g in rows)],
    )  # fmt: skip
    return lines


def event_goals(e: dict[str, Any]) -> list[str]:
    """The event-driven goals: measured against budget, one row each."""
    return table(
        ["goal", "measured s", "budget s", "met"],
        [[g["target"], fmt(g["measured_s"]), fmt(g["budget_s"]), _MET[g["met"]]]
         for g in e.get("goals") or []],
    )  # fmt: skip
