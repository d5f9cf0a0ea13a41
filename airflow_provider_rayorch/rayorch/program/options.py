"""Per-Call options: recovery policies, batching policies and Ray actor options."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import UsageError

__all__ = ["Batching", "CallOptions", "RecoveryKind", "RecoveryPolicy"]


class RecoveryKind(enum.Enum):
    """What a batch whose ``run()`` raised does next."""

    ABORT = "abort"
    RETRY_BATCH = "retry_batch"
    RETRY_TAIL = "retry_tail"
    ISOLATE_TAIL = "isolate_tail"


@dataclass(frozen=True, slots=True)
class RecoveryPolicy:
    """How a Call recovers from an exception out of ``run()`` and from lost actors.

    ``max_retries`` bounds re-runs after an exception, ``infra_retries`` bounds
    re-runs of a Grain whose actor (or node) died; both are counted per Grain.
    Every policy but ``abort()`` isolates before it blames: once a batch's
    retries are spent it is split (halves, then single rows) until a row that
    raises alone FAILS with its own exception, so a row never fails with another
    row's exception and the run goes on (only ``abort()`` stops a run). A Grain
    whose infra retries run out FAILS with the death as cause.
    """

    kind: RecoveryKind = RecoveryKind.RETRY_BATCH
    max_retries: int = 1
    infra_retries: int = 3

    def __post_init__(self) -> None:
        if not isinstance(self.kind, RecoveryKind):
            raise UsageError(
                f"RecoveryPolicy.kind must be a RecoveryKind, got {self.kind!r}; build policies "
                "with RecoveryPolicy.abort(), .retry_batch(), .retry_tail() or .isolate_tail()"
            )
        for name in ("max_retries", "infra_retries"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise UsageError(f"RecoveryPolicy.{name} must be an int >= 0, got {value!r}")

    @classmethod
    def abort(cls, *, infra_retries: int = 3) -> RecoveryPolicy:
        """An exception out of ``run()`` stops the run with ``ExecutionError``."""
        return cls(RecoveryKind.ABORT, 0, infra_retries)

    @classmethod
    def retry_batch(cls, max_retries: int = 1, *, infra_retries: int = 3) -> RecoveryPolicy:
        """Run the same batch again at once, up to ``max_retries`` times; then split it,
        each part again at once, until a row that raises alone FAILS (the default)."""
        return cls(RecoveryKind.RETRY_BATCH, max_retries, infra_retries)

    @classmethod
    def retry_tail(cls, max_retries: int = 1, *, infra_retries: int = 3) -> RecoveryPolicy:
        """Put the batch's Grains back behind what is already queued (they may share a
        batch with others), up to ``max_retries`` times; then split it behind the queue
        until a row that raises alone FAILS."""
        return cls(RecoveryKind.RETRY_TAIL, max_retries, infra_retries)

    @classmethod
    def isolate_tail(cls, max_retries: int = 1, *, infra_retries: int = 3) -> RecoveryPolicy:
        """Retry the same batch behind the queue, up to ``max_retries`` times; then split
        it behind the queue until a row that raises alone FAILS."""
        return cls(RecoveryKind.ISOLATE_TAIL, max_retries, infra_retries)

    def describe(self) -> str:
        """A stable text form, used in fingerprints and metrics."""
        return (
            f"{self.kind.value}(max_retries={self.max_retries}, infra_retries={self.infra_retries})"
        )


class Batching(enum.Enum):
    """How a Call's FIFO ready queue is cut into batches."""

    ANY_PARENT = "any_parent"
    """Take the oldest ready Grains, whatever their parents (elastic)."""
    SINGLE_PARENT = "single_parent"
    """Take siblings of the oldest ready Grain's parent only (parent-bound)."""


@dataclass(frozen=True)
class CallOptions:
    """Options of one ``RayModule``; shared by every Call of that module."""

    replicas: int = 1
    batch_size: int = 16
    batching: Batching = Batching.ANY_PARENT
    recovery: RecoveryPolicy = field(default_factory=RecoveryPolicy)
    #: Batches a single actor may have queued at once (hides RPC latency on Ray).
    max_batches_in_flight: int = 2
    #: Seconds one batch may run on its worker before its actor is killed and the
    #: batch counts as failed (``None``: no bound). Read by the Ray backend.
    batch_timeout_s: float | None = None
    #: Modules with the same name run in one actor process, a thread per replica;
    #: ``False``: a process per replica; ``None`` (the default): the modules that ask
    #: for nothing share one (``program/shared_processes.py`` resolves it).
    share_process: str | Literal[False] | None = None
    #: Everything else, passed unchanged to ``ray.remote(...).options(...)``.
    ray_actor_options: dict[str, Any] = field(default_factory=dict)
