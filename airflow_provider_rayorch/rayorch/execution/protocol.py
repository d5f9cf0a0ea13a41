"""The typed messages between the driver and a pool actor.

The driver sends a ``Task`` per batch (one actor-call argument) and, once per
actor, a ``CallSpec`` per Call. The actor answers each task with one reply
(``Done``, ``Raised``, ``Rejected`` or ``InputsLost``) next to the remote values,
and a ``running()`` probe with ``Running`` or None. Every type is frozen and
pickles as a plain tuple (the cheapest form Ray can ship).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..runtime.value_needs import PortNeeds

__all__ = [
    "CallSpec",
    "Done",
    "InputsLost",
    "Raised",
    "Rejected",
    "Reply",
    "Running",
    "Task",
]


@dataclass(frozen=True, slots=True)
class CallSpec:
    """What an actor needs to run batches of one Call: sent once, at creation."""

    name: str
    kwargs: dict[str, Any]
    n_outputs: int
    #: Per output Port: the facts the driver needs about each row's value.
    needs: tuple[PortNeeds, ...]

    def __reduce__(self) -> tuple[Any, ...]:
        return (CallSpec, (self.name, self.kwargs, self.n_outputs, self.needs))


@dataclass(frozen=True, slots=True)
class Task:
    """Run batch ``batch`` of run ``epoch`` of Call ``call`` on ``columns``.

    Batch ids restart with every run; ``(epoch, batch)`` names a batch across the
    runs of a warm ``Executor``. Recomputations of lost values use batch 0. A
    column is a list of values or, when every row is remote, ``PackedRefs``."""

    call: int
    epoch: int
    batch: int
    columns: list[Any]

    def __reduce__(self) -> tuple[Any, ...]:
        return (Task, (self.call, self.epoch, self.batch, self.columns))

    @property
    def key(self) -> tuple[int, int]:
        return (self.epoch, self.batch)


@dataclass(frozen=True, slots=True)
class Done:
    """The batch ran. ``status[i]`` is row i's failure (or ``WITHDRAWN``) and None
    for a value (``status`` is None when every row has a value). Per output Port
    ``k``, ``lengths[k]``/``truths[k]``/``inner[k]`` hold each row's facts (None
    when no node needs them; see ``facts``)."""

    status: list[Any] | None
    lengths: list[list[Any] | None]
    truths: list[list[Any] | None]
    inner: list[list[Any] | None]
    busy_s: float

    def __reduce__(self) -> tuple[Any, ...]:
        return (Done, (self.status, self.lengths, self.truths, self.inner, self.busy_s))


@dataclass(frozen=True, slots=True)
class Raised:
    """``run()`` raised (or the inputs could not be fetched): ``error`` says what."""

    error: str
    busy_s: float = 0.0
    #: The exception when it survives pickling.
    exception: BaseException | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        return (Raised, (self.error, self.busy_s, self.exception))


@dataclass(frozen=True, slots=True)
class Rejected:
    """The result had the wrong length or arity."""

    reason: str
    busy_s: float = 0.0

    def __reduce__(self) -> tuple[Any, ...]:
        return (Rejected, (self.reason, self.busy_s))


@dataclass(frozen=True, slots=True)
class InputsLost:
    """Input objects vanished (their node or owner died): hex ids of the lost ones."""

    refs: tuple[str, ...]

    def __reduce__(self) -> tuple[Any, ...]:
        return (InputsLost, (self.refs,))


Reply = Done | Raised | Rejected | InputsLost


@dataclass(frozen=True, slots=True)
class Running:
    """What an actor's ``running()`` probe answers while a batch runs."""

    epoch: int
    batch: int
    #: Seconds since ``run()`` of that batch started, on the actor's clock.
    elapsed_s: float

    def __reduce__(self) -> tuple[Any, ...]:
        return (Running, (self.epoch, self.batch, self.elapsed_s))
