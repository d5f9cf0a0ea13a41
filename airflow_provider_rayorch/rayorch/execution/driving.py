"""The command loop every backend shares: how a backend drives the core."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ExecutionError
from ..runtime.events import Abort, Dispatch, MicrobatchDone, RunFinished, Withdraw, WorkerAdded

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from ..runtime.core import Core, Microbatch

__all__ = ["Delivery", "deliver_as_held", "drive"]


@dataclass(frozen=True, slots=True)
class Delivery:
    """A finished microbatch and its outputs as the backend hands them over.

    The core's ``Microbatch`` keeps the values its lineage holds (on Ray: remote
    references); a backend that fetches or converts them puts the result here and
    never writes into the core's objects."""

    microbatch: Microbatch
    #: Per output Port: one entry per source, a value or an ``OutputIssue``.
    outputs: list[list[Any]]


def deliver_as_held(microbatch: Microbatch) -> Delivery:
    """The delivery of a backend whose values are the outputs themselves (in-process)."""
    return Delivery(microbatch, microbatch.outputs)


def drive(
    core: Core,
    workers: Iterable[tuple[Any, ...]],
    *,
    submit: Callable[[Dispatch], None],
    advance: Callable[[], list[Any]],
    has_work: Callable[[], bool],
    deliver: Callable[[Microbatch], Delivery | None] = deliver_as_held,
    withdraw: Callable[[Withdraw], None] | None = None,
    validate: bool = False,
) -> Iterator[Delivery]:
    """Register ``workers`` (id, module, capacity), start ``core`` and carry out its
    commands until the run finishes, yielding each microbatch's delivery as it
    completes.

    ``submit`` starts a batch, ``advance`` waits for (or runs) batches and returns the
    commands their events produced, ``has_work`` tells whether batches are pending,
    ``deliver`` makes a finished microbatch's ``Delivery`` (e.g. fetches remote
    outputs; None: not yet, the backend yields it later itself),
    ``withdraw`` tells workers which rows of their queued batches to skip;
    ``validate`` checks the core's invariants after registration and start (a
    testing backend checks them after each later event itself).

    The loop only reads the commands: the core's state changes through
    ``core.handle`` alone.
    """
    commands: list[Any] = []
    for worker in workers:  # (id, module, capacity[, process shared with others])
        commands += core.handle(WorkerAdded(*worker))
    commands += core.start()
    if validate:
        core.validate()
    while True:
        for command in commands:
            kind = type(command)
            if kind is Dispatch:
                submit(command)
            elif kind is Withdraw:
                if withdraw is not None:
                    withdraw(command)
            elif kind is MicrobatchDone:
                delivery = deliver(command.microbatch)
                if delivery is not None:
                    yield delivery
            elif kind is Abort:
                raise command.error
            elif kind is RunFinished:
                return
        if not has_work():
            raise ExecutionError(
                f"the run stalled with {core.ready_grains()} ready Grains and no batch in "
                "flight; this is a bug in the engine, please report it"
            )
        commands = advance()
