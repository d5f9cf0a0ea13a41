"""Issue 29's goals for a triggered run: the provider's medians over the Ray Data
``@task``'s, from one window (one run of the section).

Against the ``@task`` that maps whole documents (``@task + Ray Data``): trigger -> run
success at most 0.8x for ``RayOrchOperator`` and 1.0x for the microbatch pattern,
trigger -> first commit at most 0.8x for both. Against the ``@task`` that gathers pages
per document (``@task + Ray Data + groupby``): at most 0.5x for the operator and 0.65x
for the pattern, for both figures. Every operator variant is held to the operator's
targets and every pattern variant to the pattern's.
"""

from __future__ import annotations

from typing import Any

from .facts import RAY_DATA, RAY_DATA_GROUPBY, VARIANTS, Kind

__all__ = ["FIGURES", "TARGETS", "goals"]

#: The goals' figures: key -> label.
FIGURES = {
    "total_s": "trigger -> run success",
    "trigger_to_first_commit_s": "trigger -> first commit",
}
#: (kind, baseline variant, figure) -> the largest ratio that meets the goal.
TARGETS = {
    (Kind.OPERATOR, RAY_DATA, "total_s"): 0.8,
    (Kind.OPERATOR, RAY_DATA, "trigger_to_first_commit_s"): 0.8,
    (Kind.OPERATOR, RAY_DATA_GROUPBY, "total_s"): 0.5,
    (Kind.OPERATOR, RAY_DATA_GROUPBY, "trigger_to_first_commit_s"): 0.5,
    (Kind.PATTERN, RAY_DATA, "total_s"): 1.0,
    (Kind.PATTERN, RAY_DATA, "trigger_to_first_commit_s"): 0.8,
    (Kind.PATTERN, RAY_DATA_GROUPBY, "total_s"): 0.65,
    (Kind.PATTERN, RAY_DATA_GROUPBY, "trigger_to_first_commit_s"): 0.65,
}


def _median(variants: dict[str, Any], name: str, figure: str) -> float | None:
    value = (variants.get(name) or {}).get("median", {}).get(figure)
    return None if value is None else float(value)


def goals(variants: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per measured provider variant, baseline and figure: both medians, their
    ratio, the target and whether it is met (None when either median is missing)."""
    rows = []
    for name, variant in VARIANTS.items():
        if variant.kind is Kind.RAY_DATA or name not in variants:
            continue
        for (kind, baseline, figure), target in TARGETS.items():
            if kind is not variant.kind:
                continue
            ours, theirs = _median(variants, name, figure), _median(variants, baseline, figure)
            ratio = None if ours is None or not theirs else round(ours / theirs, 3)
            rows.append({
                "variant": name, "baseline": baseline, "figure": figure, "ours_s": ours,
                "baseline_s": theirs, "ratio": ratio, "target": target,
                "met": None if ratio is None else ratio <= target,
            })  # fmt: skip
    return rows
