"""The command loop every backend shares: how a backend drives the core."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ExecutionError
from ..runtime.events import Abort, Dispatch, MicrobatchDone, RunFinished, Withdraw, WorkerAdded

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from ..runtime.core import Core, Microbatch

__all__ = ["drive"]


def drive(
    core: Core,
    workers: Iterable[tuple[Any, int, int | None]],
    *,
    submit: Callable[[Dispatch], None],
    advance: Callable[[], list[Any]],
    has_work: Callable[[], bool],
    deliver: Callable[[Microbatch], None] | None = None,
    withdraw: Callable[[Withdraw], None] | None = None,
    validate: bool = False,
) -> Iterator[Microbatch]:
    """Register ``workers`` (id, module, capacity), start ``core`` and carry out its
    commands until the run finishes, yielding microbatches as they complete.

    ``submit`` starts a batch, ``advance`` waits for (or runs) batches and returns the
    commands their events produced, ``has_work`` tells whether batches are pending,
    ``deliver`` prepares a finished microbatch (e.g. fetches remote outputs),
    ``withdraw`` tells workers which rows of their queued batches to skip;
    ``validate`` checks the core's invariants after registration and start (a
    testing backend checks them after each later event itself).

    The loop only reads the commands: the core's state changes through
    ``core.handle`` alone.
    """
    commands: list[Any] = []
    for worker, module, capacity in workers:
        commands += core.handle(WorkerAdded(worker, module, capacity))
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
                microbatch = command.microbatch
                if deliver is not None:
                    deliver(microbatch)
                yield microbatch
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
