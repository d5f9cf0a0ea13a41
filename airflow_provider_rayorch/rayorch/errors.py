"""The engine's exception tree.

::

    RayOrchError                    base of everything the engine raises on purpose
    ├── CompileError                the pipeline's structure or options are invalid;
    │                               raised before any actor starts
    ├── ExecutionError              a run stopped: an ``abort()`` policy fired, the
    │   │                           cluster cannot provide what a Call asks for, ...
    │   └── ResourceUnavailableError  no node can ever satisfy a Call's resources
    └── InvalidTransition           an illegal lineage transition: a bug in an
                                    executor or in the core, never a user error;
                                    carries the item's story

Errors from user code never escape as such: they become row outcomes, or, under
``RecoveryPolicy.abort()``, the ``__cause__`` of an ``ExecutionError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "CompileError",
    "ExecutionError",
    "InvalidTransition",
    "RayOrchError",
    "ResourceUnavailableError",
]


class RayOrchError(Exception):
    """Base class of the engine's errors."""


class CompileError(RayOrchError):
    """A pipeline cannot be compiled; the message names Calls, Ports and Domains."""


class ExecutionError(RayOrchError):
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
