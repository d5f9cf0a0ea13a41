"""Pure rules of actor start: the order pools start in, the start budget, the clock.

No Ray here: ``actor_pool`` applies these to real actors, and unit tests check
them alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError

__all__ = [
    "DEFAULT_ACTOR_START_RETRIES",
    "StartBudget",
    "StartClock",
    "start_order",
]

#: Actors of one pool that may die in a row while starting before the run fails.
DEFAULT_ACTOR_START_RETRIES = 3
#: Seconds between two looks at an actor that waits for resources.
RESOURCE_POLL_S = 2.0


def start_order(replicas: list[int]) -> list[int]:
    """Module ids in the order their actors start: the first actor of every pool
    (so batches can flow), then the rest interleaved in proportion to pool size."""
    firsts = [m for m, r in enumerate(replicas) if r > 0]
    rest = sorted((k / r, m) for m, r in enumerate(replicas) for k in range(1, r))
    return firsts + [m for _, m in rest]


class StartBudget:
    """Start failures per pool: ``retries`` replacements in a row, then the run fails.

    A failure is an actor that died, or did not become ready within its start
    timeout, before it was up. An actor of the pool that comes up resets the count:
    the budget bounds a pool that cannot start, not rare losses over a long life.
    """

    def __init__(self, retries: int = DEFAULT_ACTOR_START_RETRIES) -> None:
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise UsageError(
                f"actor_start_retries must be an int >= 0 (the actor starts a pool may retry), "
                f"got {retries!r}"
            )
        self.retries = retries
        self._in_a_row: dict[int, int] = {}
        #: Start failures of every pool so far (for metrics).
        self.total = 0

    def failed(self, module: int) -> bool:
        """Count a failed start of ``module``; True when it may be replaced."""
        self.total += 1
        count = self._in_a_row[module] = self._in_a_row.get(module, 0) + 1
        return count <= self.retries

    def in_a_row(self, module: int) -> int:
        return self._in_a_row.get(module, 0)

    def came_up(self, module: int) -> None:
        self._in_a_row.pop(module, None)


@dataclass(slots=True)
class StartClock:
    """When a starting actor has taken too long to start.

    The clock runs only while the actor's constructor runs: time spent waiting for
    resources (the actor has no process yet) does not count. The backend looks at
    the actor when ``due`` passes and reports what it sees with ``observe``."""

    timeout_s: float
    spawned_at: float
    #: When the backend should look next.
    due: float = 0.0
    #: The latest time the actor was seen without a process (waiting for resources).
    last_waiting: float | None = None

    def __post_init__(self) -> None:
        self.due = self.spawned_at + self.timeout_s

    def observe(self, now: float, *, constructing: bool) -> bool:
        """The actor was looked at ``now``: True when its start has timed out."""
        if not constructing:
            self.last_waiting = now
            self.due = now + min(self.timeout_s, RESOURCE_POLL_S)
            return False
        # Its constructor began after the last look that saw it waiting.
        began = self.spawned_at if self.last_waiting is None else self.last_waiting
        if now - began >= self.timeout_s:
            return True
        self.due = began + self.timeout_s
        return False
