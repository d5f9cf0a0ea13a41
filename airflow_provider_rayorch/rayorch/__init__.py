"""RayOrch: lineage-controlled multi-grain dataflows on Ray.

Write a ``Pipeline`` whose ``forward`` wires ``RayModule`` Calls and the
structural primitives of ``F``; run it with ``run`` or an ``Executor``.
This package never imports airflow: every Ray actor imports it.
"""

from .. import __version__
from .errors import (
    CompileError,
    DriverError,
    ExecutionError,
    InvalidTransition,
    RayOrchError,
    ResourceUnavailableError,
    StoreError,
    UsageError,
)
from .execution.api import Executor, run
from .execution.result import MicrobatchResult, RunResult
from .outcomes import GroupFailure, ItemOutcome, OutputIssue, RecordFailure
from .program.module import RayModule, function
from .program.options import RecoveryPolicy
from .program.pipeline import Pipeline
from .program.plan import Plan
from .program.structural import F
from .program.tracing import Port
from .runtime.validation import BrokenInvariant

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
