"""Keyword options of the workload pipelines: typed, validated, with a clear error."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from airflow_provider_rayorch.rayorch.errors import UsageError

__all__ = ["check_stages", "parse_options", "stage_options"]

T = TypeVar("T")


def parse_options(cls: type[T], options: dict[str, Any], *, where: str) -> T:
    """Build the options dataclass ``cls``; unknown names raise ``UsageError`` naming known ones."""
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(options) - known)
    if unknown:
        raise UsageError(
            f"{where} got unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    return cls(**options)


def stage_options(
    defaults: dict[str, Any], overrides: dict[str, dict[str, Any]], stage: str
) -> dict[str, Any]:
    """A stage's ``ray_options``: its defaults updated by ``overrides[stage]``."""
    return {**defaults, **overrides.get(stage, {})}


def check_stages(
    overrides: dict[str, dict[str, Any]], stages: tuple[str, ...], *, where: str
) -> None:
    """Reject ``ray_options`` overrides for stages the pipeline does not have."""
    unknown = sorted(set(overrides) - set(stages))
    if unknown:
        raise UsageError(
            f"{where}: ray_options names unknown stage(s) {', '.join(unknown)}; "
            f"stages: {', '.join(stages)}"
        )
