"""Progress of a run: a tqdm bar on a terminal, plain periodic log lines elsewhere.

Off a TTY (an Airflow task log, CI) it logs one line at most every
``interval_s`` seconds through the ``airflow_provider_rayorch.rayorch.progress``
logger, and a last line when the run ends.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TYPE_CHECKING, Any

from ..outcomes import ItemOutcome

if TYPE_CHECKING:
    from ..runtime.core import Microbatch

__all__ = ["Progress"]

log = logging.getLogger(__name__)


class Progress:
    """Counts sources done and failed, and Grains per second."""

    def __init__(
        self, total: int, *, enabled: bool | None = None, interval_s: float = 10.0
    ) -> None:
        self.total = total
        self.enabled = True if enabled is None else enabled
        self.interval_s = interval_s
        self.done = self.failed = self.grains = 0
        self._bar: Any = None
        self._started = self._last = time.perf_counter()

    def __enter__(self) -> Progress:
        if self.enabled and sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, unit="src", desc="rayorch", leave=False)
        return self

    def update(self, mb: Microbatch) -> None:
        self.done += mb.count
        self.failed += sum(
            o in (ItemOutcome.FAILED, ItemOutcome.SUPPRESSED) for o in mb.source_outcomes
        )
        self.grains += mb.dispatched
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(mb.count)
            self._bar.set_postfix(failed=self.failed, grains_per_s=f"{self.rate():.0f}")
            return
        now = time.perf_counter()
        if now - self._last >= self.interval_s:
            self._last = now
            log.info("%s", self.line())

    def rate(self) -> float:
        elapsed = time.perf_counter() - self._started
        return self.grains / elapsed if elapsed > 0 else 0.0

    def line(self) -> str:
        return (
            f"sources {self.done}/{self.total} done, {self.failed} failed, "
            f"{self.rate():.0f} Grains/s"
        )

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self.enabled and self.done:
            log.info("%s", self.line())
