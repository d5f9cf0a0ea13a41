"""Which listed files have finished landing.

Pure bookkeeping (no I/O): the trigger passes each listing, or re-check of the
files still waiting, to ``select`` with the time of that look.

* Where the store shows an object only once its upload completed (S3, GCS, Azure
  blob storage), a listed file is complete at first sight.
* Elsewhere (a local or POSIX filesystem, HDFS) a file has landed once nothing has
  touched it for ``QUIET_PERIOD_S``: at first sight when its modification time is
  that old already, otherwise once a later look finds the same size and mtime and
  the quiet period has passed: by the mtime, or by this watcher's own clock since
  the look that saw the last change. The clock alone counts for a file without an
  mtime, and after a change that did not move the mtime forward (a writer that sets
  an older mtime, ``cp -p``). A look that finds a file changed never announces it.
  ``next_due`` says when to look again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Container, Sequence

    from airflow_provider_rayorch.assets.watch_state import ListedFile

__all__ = ["QUIET_PERIOD_S", "StableFileSelector"]

#: Seconds a file on a filesystem without complete-on-upload objects must go
#: untouched (no change of size or modification time) to count as landed.
QUIET_PERIOD_S = 2.0


@dataclass(frozen=True, slots=True)
class _Waiting:
    """A file not yet landed: what the last look saw, and since when it has been so."""

    size: int
    mtime: float | None
    since: float
    clock_only: bool  # the mtime does not tell the last change: only our clock counts

    def due(self, quiet: float) -> float:
        """When a look that finds the file unchanged would see it landed."""
        own = self.since + quiet
        if self.clock_only or self.mtime is None:
            return own
        return min(own, self.mtime + quiet)


class StableFileSelector:
    """Remembers each waiting file between looks.

    :param complete_on_sight: the store lists only complete objects.
    :param quiet_period: seconds a file must go untouched (``QUIET_PERIOD_S``).
    """

    def __init__(self, *, complete_on_sight: bool, quiet_period: float = QUIET_PERIOD_S) -> None:
        self.complete_on_sight = complete_on_sight
        self.quiet_period = quiet_period
        self._waiting: dict[str, _Waiting] = {}

    def select(
        self, listing: Sequence[ListedFile], known: Container[str], now: float
    ) -> list[ListedFile]:
        """Files of ``listing`` not in ``known`` that have landed by ``now``, sorted by URI.

        The others wait. ``listing`` is a whole listing or a re-check of the waiting
        files: a waiting file it does not hold is forgotten (gone, or known now).
        """
        landed, waiting = [], {}
        for f in listing:
            if f.uri in known:
                continue
            state = self._look(f, now)
            if state is None:
                landed.append(f)
            else:
                waiting[f.uri] = state
        self._waiting = waiting
        return sorted(landed, key=lambda f: f.uri)

    def _look(self, f: ListedFile, now: float) -> _Waiting | None:
        """None when ``f`` has landed, else what to remember of it."""
        if self.complete_on_sight:
            return None
        quiet = self.quiet_period
        old = f.mtime is not None and now - f.mtime >= quiet
        before = self._waiting.get(f.uri)
        if before is None:
            return None if old else _Waiting(f.size, f.mtime, now, clock_only=False)
        if (before.size, before.mtime) != (f.size, f.mtime):
            moved = f.mtime is not None and before.mtime is not None and f.mtime > before.mtime
            return _Waiting(f.size, f.mtime, now, clock_only=not moved)
        if (old and not before.clock_only) or now - before.since >= quiet:
            return None
        return before

    def forget_waiting(self) -> None:
        """Forget the waiting files: the next listing sees them as new."""
        self._waiting = {}

    def waiting(self) -> list[str]:
        """The URIs of the files waiting to land, sorted."""
        return sorted(self._waiting)

    def next_due(self) -> float | None:
        """The earliest time a re-check could find a waiting file landed (None: none waits)."""
        return min((w.due(self.quiet_period) for w in self._waiting.values()), default=None)
