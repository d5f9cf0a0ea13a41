"""The chaos benchmark's pipeline and the faults it stages (importable by Ray workers).

Faults are staged through token files in a fault directory: a worker that finds
its token deletes it (``os.unlink`` succeeds for one process only) and fails, and
logs the fault it staged first, so every fault that happened is counted once:

- ``start-exit``: the next page actor to start exits inside its constructor;
- ``hang-<page>``: the next try of that page blocks forever (``batch_timeout_s``
  must catch it).
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import airflow_provider_rayorch.rayorch as ro

START_EXIT = "start-exit"
LOG = "faults.log"


def hang_token(page: int) -> str:
    return f"hang-{page}"


def consume(fault_dir: str, token: str) -> bool:
    """True for the one process that removes the token file."""
    try:
        os.unlink(os.path.join(fault_dir, token))
    except FileNotFoundError:
        return False
    return True


def log_fault(fault_dir: str, kind: str) -> None:
    fd = os.open(os.path.join(fault_dir, LOG), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, f"{kind}\n".encode())
    finally:
        os.close(fd)


def staged_faults(fault_dir: str) -> Counter[str]:
    """Faults the workers staged so far, by kind."""
    path = Path(fault_dir) / LOG
    return Counter(path.read_text().splitlines()) if path.exists() else Counter()


def pages_of(doc: int) -> list[int]:
    return list(range(doc * 100, doc * 100 + 1 + doc % 9))


def doomed(page: int) -> bool:
    """Page 1 of every 11th document is a GroupFailure: its siblings are withdrawn."""
    return page % 100 == 1 and (page // 100) % 11 == 5


class Pages:
    def run(self, docs: list[int]) -> list[list[int]]:
        return [pages_of(d) for d in docs]


class ChaosPage:
    """A slow page stage that fails where the fault directory says."""

    def __init__(self, fault_dir: str, delay: float) -> None:
        if fault_dir and consume(fault_dir, START_EXIT):
            log_fault(fault_dir, "start_exit")
            os._exit(1)
        self.fault_dir = fault_dir
        self.delay = delay

    def run(self, pages: list[int]) -> list[Any]:
        if self.fault_dir:
            for page in pages:
                if consume(self.fault_dir, hang_token(page)):
                    log_fault(self.fault_dir, "hang")
                    threading.Event().wait()
        time.sleep(self.delay)
        return [ro.GroupFailure("torn") if doomed(p) else p * 3 + 1 for p in pages]


class ChaosPipeline(ro.Pipeline):
    def __init__(
        self,
        fault_dir: str = "",
        delay: float = 0.01,
        batch_timeout_s: float | None = None,
        share: bool = False,
    ) -> None:
        #: ``share``: both stages' workers in one process (``share_process``).
        shared: dict[str, Any] = {"share_process": "chaos"} if share else {}
        self.pages = ro.RayModule(Pages).ray_options(batch_size=4, **shared)
        self.page = (
            ro.RayModule(ChaosPage)
            .pre_init(fault_dir, delay)
            .ray_options(
                replicas=2,
                batch_size=4,
                max_batches_in_flight=2,
                batch_timeout_s=batch_timeout_s,
                recovery=ro.RecoveryPolicy.retry_batch(1, infra_retries=20),
                **shared,
            )
        )

    def forward(self, doc: Any) -> Any:
        return ro.F.reduce(self.page(ro.F.expand(self.pages(doc))))


def compare(expected: list[Any], got: list[Any]) -> Counter[str]:
    """Per source: pages missing (lost), pages extra (duplicated), anything else
    different (mismatched); an expected issue must come back as the same issue."""
    tally: Counter[str] = Counter()
    if len(got) != len(expected):
        tally["lost"] += abs(len(expected) - len(got))
    for want, have in zip(expected, got, strict=False):
        if isinstance(want, ro.OutputIssue):
            if not (
                isinstance(have, ro.OutputIssue)
                and have.outcome is want.outcome
                and have.cause == want.cause
            ):
                tally["mismatched"] += 1
            continue
        if isinstance(have, ro.OutputIssue):
            tally["lost"] += len(want)
            continue
        missing = Counter(want) - Counter(have)
        extra = Counter(have) - Counter(want)
        tally["lost"] += sum(missing.values())
        tally["duplicated"] += sum(extra.values())
        if not missing and not extra and have != want:
            tally["mismatched"] += 1
    return tally
