"""RayOrch: lineage-controlled multi-grain dataflows on Ray.

Write a ``Pipeline`` whose ``forward`` wires ``RayModule`` Calls and the
structural primitives of ``F``; run it with ``run`` or an ``Executor``.
This package never imports airflow: every Ray actor imports it.

The names below load on first use (PEP 562): a pool's actor imports only the
worker side (``execution.ray_worker`` and what it needs), not the compiler, the
core and the driver, which cuts what every actor pays at start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (  # light: the worker side raises them too
    CompileError,
    DriverError,
    ExecutionError,
    InvalidTransition,
    RayOrchError,
    ResourceUnavailableError,
    StoreError,
    UsageError,
)

if TYPE_CHECKING:
    from .execution.api import Executor, run
    from .execution.result import MicrobatchResult, RunResult
    from .outcomes import GroupFailure, ItemOutcome, OutputIssue, RecordFailure
    from .pipeline import Pipeline
    from .program.module import RayModule, function
    from .program.options import RecoveryPolicy
    from .program.plan import Plan
    from .program.structural import F
    from .program.tracing import Port
    from .runtime.validation import BrokenInvariant

#: Public name -> the module (relative to this package) that defines it.
_HOMES = {
    "Executor": ".execution.api",
    "run": ".execution.api",
    "MicrobatchResult": ".execution.result",
    "RunResult": ".execution.result",
    **dict.fromkeys(("GroupFailure", "ItemOutcome", "OutputIssue", "RecordFailure"), ".outcomes"),
    "RayModule": ".program.module",
    "function": ".program.module",
    "RecoveryPolicy": ".program.options",
    "Pipeline": ".pipeline",
    "Plan": ".program.plan",
    "F": ".program.structural",
    "Port": ".program.tracing",
    "BrokenInvariant": ".runtime.validation",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


#: The package's version; the provider's root module takes it from here.
__version__ = "0.1.0"
#: ``__version__`` as a tuple of ints (``(0, 1, 0)``), as the paper's package has it.
version_info = tuple(int(part) for part in __version__.split(".") if part.isdigit())

__all__ = [
    "BrokenInvariant",
    "CompileError",
    "DriverError",
    "ExecutionError",
    "Executor",
    "F",
    "GroupFailure",
    "InvalidTransition",
    "ItemOutcome",
    "MicrobatchResult",
    "OutputIssue",
    "Pipeline",
    "Plan",
    "Port",
    "RayModule",
    "RayOrchError",
    "RecordFailure",
    "RecoveryPolicy",
    "ResourceUnavailableError",
    "RunResult",
    "StoreError",
    "UsageError",
    "__version__",
    "function",
    "run",
    "version_info",
]
