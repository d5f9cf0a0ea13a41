"""Which listed files have settled: the same size on two polls in a row.

Pure bookkeeping (no I/O, no clock): the trigger calls ``select`` once per poll.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Container, Sequence

    from airflow_provider_rayorch.assets.watch_state import ListedFile

__all__ = ["StableFileSelector"]


class StableFileSelector:
    """Remembers each unknown file's size from the previous poll."""

    def __init__(self) -> None:
        self._last: dict[str, int] = {}

    def select(self, listing: Sequence[ListedFile], known: Container[str]) -> list[ListedFile]:
        """Files not in ``known`` whose size equals the previous poll's, sorted by URI.

        A file seen for the first time, or grown since, waits for the next poll.
        """
        settled, sizes = [], {}
        for f in listing:
            if f.uri in known:
                continue
            if self._last.get(f.uri) == f.size:
                settled.append(f)
            sizes[f.uri] = f.size
        self._last = sizes
        return sorted(settled, key=lambda f: f.uri)
