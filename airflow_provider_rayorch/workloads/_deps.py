"""Guarded imports for optional dependencies, with errors that say what to install."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from airflow_provider_rayorch.rayorch.errors import RayOrchError

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["MissingDependencyError", "MissingModelError", "require"]


class MissingDependencyError(RayOrchError, ImportError):
    """An optional package a workload needs is not installed."""


class MissingModelError(RayOrchError, FileNotFoundError):
    """A model directory an adapter loads from does not exist or is incomplete."""


def require(module: str, *, extra: str, package: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming the extra.

    ``package`` is the distribution to ``pip install`` when it differs from the module.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        dist = package or module.split(".")[0]
        raise MissingDependencyError(
            f"{module!r} is needed here but cannot be imported ({exc}). Install it with "
            f"`pip install 'airflow-provider-rayorch[{extra}]'` or `pip install {dist}`."
        ) from exc
