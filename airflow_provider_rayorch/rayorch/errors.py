"""The engine's exception tree.

::

    RayOrchError                    base of everything the engine raises on purpose
    ├── CompileError                the pipeline's structure or options are invalid;
    │                               raised before any actor starts (also a ValueError)
    ├── UsageError                  a public call got a wrong argument (a column that
    │                               is not a sequence, an unknown backend, a negative
    │                               retry count); also a ValueError
    ├── ExecutionError              a run stopped: an ``abort()`` policy fired, the
    │   │                           cluster cannot provide what a Call asks for, ...
    │   │                           (also a RuntimeError)
    │   └── ResourceUnavailableError  no node can ever satisfy a Call's resources
    ├── InvalidTransition           an illegal lineage transition: a bug in an
    │   │                           executor or in the core, never a user error;
    │   │                           carries the item's story
    │   └── BrokenInvariant         ``Core.validate()`` found a core invariant broken
    │                               (runtime/validation.py; also an AssertionError)
    ├── StoreError                  a run store is unreadable, or holds something
    │                               this version cannot use
    ├── DriverError                 a stored run cannot start; carries ``exit_code``
    └── (the Airflow layer's errors: RayOrchTransientError, RayOrchAirflowError and
        their subclasses, in ``airflow_provider_rayorch.exceptions``)

The Airflow layer's errors (``airflow_provider_rayorch.exceptions``) have this same
root: ``except RayOrchError`` catches everything the package raises on purpose.

Every error pickles (exceptions cross process boundaries: Ray tasks and actors, the
embedded driver, Airflow's supervisor): the root's ``__reduce__`` rebuilds an
instance from its ``args`` and attributes without calling ``__init__`` again, so a
subclass with its own constructor (``InvalidTransition``) needs nothing more, as
dask's ``InvalidTransition.__reduce__`` does by hand.

``CompileError`` is a ``ValueError`` and ``ExecutionError`` a ``RuntimeError``, as in
the paper's package, so ``except`` clauses written for it keep working. Every class
here is exported from ``airflow_provider_rayorch.rayorch``; exceptions with a leading
underscore are control flow inside one module and never leave it.

Errors from user code never escape as such: they become row outcomes, or, under
``RecoveryPolicy.abort()``, the ``__cause__`` of an ``ExecutionError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "CompileError",
    "DriverError",
    "ExecutionError",
    "InvalidTransition",
    "RayOrchError",
    "ResourceUnavailableError",
    "StoreError",
    "UsageError",
]


def _rebuild(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """Unpickle an error: its ``args`` and attributes, ``__init__`` not called again.

    The instance is made by its built-in base's ``__new__`` (``OSError``'s for an
    ``OSError``), so the class that comes back is the class that was pickled."""
    new = next(base.__new__ for base in cls.__mro__ if base.__module__ == "builtins")
    exc = new(cls, *args)
    exc.__dict__.update(state)
    return exc


class RayOrchError(Exception):
    """Base class of everything the package raises on purpose (engine and Airflow layer)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuild, (type(self), self.args, dict(self.__dict__))


class CompileError(RayOrchError, ValueError):
    """A pipeline cannot be compiled; the message names Calls, Ports and Domains."""


class UsageError(RayOrchError, ValueError):
    """A public API call got an argument of the wrong type or value; the message
    names the argument, what it got and what it takes."""


class ExecutionError(RayOrchError, RuntimeError):
    """A run stopped before every source reached an outcome."""


class ResourceUnavailableError(ExecutionError):
    """A Call asks for resources that no node of the cluster can provide."""


class InvalidTransition(RayOrchError):
    """An event is not legal for a Grain in its current phase.

    ``story`` lists the Grain's earlier transitions, oldest first.
    """

    def __init__(self, grain: str, phase: str, event: str, story: Sequence[str]) -> None:
        self.grain = grain
        self.phase = phase
        self.event = event
        self.story = tuple(story)
        history = "; ".join(self.story) or "(no earlier transitions)"
        super().__init__(
            f"{grain}: event {event!r} is illegal in phase {phase!r}. Story: {history}"
        )


class StoreError(RayOrchError):
    """A run store is unreadable, or holds something this version cannot use."""


class DriverError(RayOrchError):
    """A run cannot start; ``exit_code`` tells the caller why (1: any error)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code
