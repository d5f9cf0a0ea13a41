"""Events an executor feeds the core, and commands the core returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..errors import ExecutionError
    from ..program.plan import Node
    from .state import Microbatch

__all__ = [
    "WITHDRAWN",
    "Abort",
    "BatchFinished",
    "BatchRaised",
    "BatchRejected",
    "Command",
    "Dispatch",
    "Event",
    "MicrobatchDone",
    "RunFinished",
    "Withdraw",
    "Withdrawn",
    "WorkerAdded",
    "WorkerLost",
]


# -- events -------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class WorkerAdded:
    """An actor (or in-process instance) of ``module`` can take batches."""

    worker: Any
    module: int
    #: Batches it may hold at once (default: the module's ``max_batches_in_flight``).
    capacity: int | None = None
    #: The process it shares with other workers (any hashable id), or None: its own.
    #: A Grain that was on a worker that died runs alone in its whole process.
    host: Any = None


@dataclass(frozen=True, slots=True)
class WorkerLost:
    """``worker`` died; the batches it held are lost.

    With ``charge`` (the default) the batch it was running is charged an infra
    retry. ``charge=False`` when the backend killed it on purpose (a hung batch,
    already reported as ``BatchRaised``): every batch left on it runs again
    under a new generation, uncharged. ``node``: where the worker ran (a label the
    backend gives, such as a node id and address), recorded with its lost batches.
    """

    worker: Any
    reason: str = "worker lost"
    charge: bool = True
    node: str | None = None


@dataclass(frozen=True, slots=True)
class BatchFinished:
    """A batch ran. ``rows`` has one entry per Grain, in dispatch order: the value
    (a tuple of values for a Call with several outputs), a ``RecordFailure`` or a
    ``GroupFailure``."""

    batch: int
    rows: list[Any]
    #: Seconds the UDF spent on the batch, for metrics.
    busy_s: float = 0.0


@dataclass(frozen=True, slots=True)
class BatchRaised:
    """The batch's ``run()`` raised; ``error`` describes the exception."""

    batch: int
    error: str
    busy_s: float = 0.0
    #: The exception itself when the backend has it (chained under ``abort()``).
    exception: BaseException | None = None


@dataclass(frozen=True, slots=True)
class BatchRejected:
    """The batch's result had the wrong length or arity: its rows FAIL, no retry."""

    batch: int
    reason: str
    busy_s: float = 0.0


Event = WorkerAdded | WorkerLost | BatchFinished | BatchRaised | BatchRejected


# -- commands -----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Dispatch:
    """Run ``node``'s UDF on ``columns`` (one list per input Port) on ``worker``."""

    batch: int
    worker: Any
    node: Node
    columns: list[list[Any]]
    kwargs: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Withdraw:
    """Rows ``rows`` (indexes into the batch) of in-flight batch ``batch`` can no
    longer commit: a sibling's ``GroupFailure`` came first. A backend may skip them
    if the batch has not started; their report is ignored either way."""

    batch: int
    worker: Any
    rows: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MicrobatchDone:
    """Every Item of the microbatch's sources has an outcome."""

    microbatch: Microbatch


@dataclass(frozen=True, slots=True)
class RunFinished:
    """Every admitted microbatch is done."""


@dataclass(frozen=True, slots=True)
class Abort:
    """Stop the run (a Call's policy is ``abort()``)."""

    error: ExecutionError


Command = Dispatch | Withdraw | MicrobatchDone | RunFinished | Abort


class Withdrawn:
    """The row a backend reports for a withdrawn row it skipped (never committed)."""

    __slots__ = ()

    def __reduce__(self) -> str:
        return "WITHDRAWN"

    def __repr__(self) -> str:
        return "WITHDRAWN"


#: The one ``Withdrawn`` instance (it survives pickling as itself).
WITHDRAWN = Withdrawn()
