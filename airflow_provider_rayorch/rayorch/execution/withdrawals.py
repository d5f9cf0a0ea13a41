"""An actor's record of rows the driver withdrew from batches queued on it."""

from __future__ import annotations

__all__ = ["Withdrawals"]


class Withdrawals:
    """Rows to skip per batch, keyed by ``(epoch, batch)``.

    Batch ids restart with every run of a warm ``Executor``; the epoch (one per
    run) keeps a new run's batch 3 distinct from the last run's. A mark for a
    batch that has started already (or is older) is moot and dropped.
    """

    __slots__ = ("_marks", "last_started")

    def __init__(self) -> None:
        self._marks: dict[tuple[int, int], set[int]] = {}
        #: The newest ``(epoch, batch)`` this actor has started.
        self.last_started: tuple[int, int] = (0, 0)

    def mark(self, key: tuple[int, int], rows: list[int]) -> bool:
        """Skip ``rows`` of batch ``key`` when it starts; False when it has started."""
        if key <= self.last_started:
            return False
        self._marks.setdefault(key, set()).update(rows)
        return True

    def start(self, key: tuple[int, int]) -> set[int] | None:
        """Batch ``key`` starts: the rows to skip in it (None: run them all)."""
        if key > self.last_started:
            self.last_started = key
        skip = self._marks.pop(key, None)
        if self._marks:  # marks that came after their batch had started
            for old in [k for k in self._marks if k < key]:
                del self._marks[old]
        return skip

    def __len__(self) -> int:
        return len(self._marks)
