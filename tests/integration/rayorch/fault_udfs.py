"""UDFs and pipelines for the fault matrix (importable by Ray workers and drivers).

Every UDF appends what it is asked to do to a log file in ``log_dir`` before it
does it (one line per constructor call or per row), so a test counts invocations
exactly, whatever the schedule. Faults are staged by rows and files, never by time.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.execution.shared_process import SharedProcess

#: How long a staged fault waits for the test's signal before giving up loudly.
SIGNAL_WAIT_S = 120.0


def log(log_dir: str, name: str, entries: list[Any]) -> None:
    """Append one line per entry to ``log_dir/name.log`` (O_APPEND: whole lines)."""
    text = "".join(f"{e}\n" for e in entries)
    fd = os.open(os.path.join(log_dir, f"{name}.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def counts(log_dir: str, name: str) -> Counter[str]:
    """How many times each entry was logged under ``name``."""
    path = Path(log_dir) / f"{name}.log"
    if not path.exists():
        return Counter()
    return Counter(path.read_text().splitlines())


def fault(mode: str, what: str) -> None:
    """Fail the way ``mode`` says: raise, exit the process, or block forever."""
    if mode == "raise":
        raise RuntimeError(f"staged exception: {what}")
    if mode == "exit":
        os._exit(1)
    if mode == "hang":
        threading.Event().wait()
    raise AssertionError(f"unknown fault mode {mode!r}")


def wait_for_file(path: str, what: str) -> None:
    deadline = time.monotonic() + SIGNAL_WAIT_S
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the test never signalled {what} ({path})")
        time.sleep(0.01)


# -- actor start --------------------------------------------------------------------------
class FaultyInit:
    """Its constructor logs ``init`` and then fails as ``mode`` says, on its first
    ``faulty_starts`` calls (``-1``: on every call); ``run`` multiplies by 10."""

    def __init__(self, log_dir: str, mode: str, faulty_starts: int = -1) -> None:
        before = counts(log_dir, "init")["init"]
        log(log_dir, "init", ["init"])
        if faulty_starts < 0 or before < faulty_starts:
            fault(mode, "model load failed" if mode == "raise" else "constructor")
        self.log_dir = log_dir

    def run(self, items: list[int]) -> list[int]:
        log(self.log_dir, "run", items)
        return [i * 10 for i in items]


# -- batch run ----------------------------------------------------------------------------
class FaultyRun:
    """Logs every row it is given; a batch holding row ``bad`` fails as ``mode`` says
    on its first ``times`` tries (``-1``: every try); other rows multiply by 10."""

    def __init__(self, log_dir: str, mode: str, bad: int, times: int = -1) -> None:
        self.log_dir = log_dir
        self.mode = mode
        self.bad = bad
        self.times = times

    def run(self, items: list[int]) -> list[int]:
        log(self.log_dir, "run", items)
        if self.bad in items:
            tries = counts(self.log_dir, "run")[str(self.bad)]
            if self.times < 0 or tries <= self.times:
                fault(self.mode, f"row {self.bad}")
        return [i * 10 for i in items]


class One(ro.Pipeline):
    """One Call ``model`` of ``udf`` (``pre_init`` args and ``ray_options`` given)."""

    def __init__(self, udf: type, args: tuple[Any, ...], **options: Any) -> None:
        self.model = ro.RayModule(udf).pre_init(*args).ray_options(**options)

    def forward(self, x: Any) -> Any:
        return self.model(x)


# -- withdrawal ---------------------------------------------------------------------------
class SiblingPages:
    """``"fail"`` is a GroupFailure; ``"fault"`` waits until the file ``signal``
    exists (the test creates it once the withdrawal reached the actor) and then
    fails as ``mode`` says; other pages come back upper-cased. Every page is logged."""

    def __init__(self, log_dir: str, mode: str, signal: str) -> None:
        self.log_dir = log_dir
        self.mode = mode
        self.signal = signal

    def run(self, pages: list[str]) -> list[Any]:
        log(self.log_dir, "run", pages)
        out: list[Any] = []
        for page in pages:
            if page == "fail":
                out.append(ro.GroupFailure("torn"))
                continue
            if page == "fault":
                wait_for_file(self.signal, "the withdrawal")
                fault(self.mode, "in-flight sibling")
            out.append(page.upper())
        return out


class Siblings(ro.Pipeline):
    """doc (a list of page strings) -> pages on one actor, one page per batch, three
    batches queued at once -> reduce."""

    def __init__(self, log_dir: str, mode: str, signal: str, batch_timeout_s: float | None) -> None:
        self.page = (
            ro.RayModule(SiblingPages)
            .pre_init(log_dir, mode, signal)
            .ray_options(
                replicas=1,
                batch_size=1,
                max_batches_in_flight=3,
                batch_timeout_s=batch_timeout_s,
                recovery=ro.RecoveryPolicy.retry_batch(1, infra_retries=3),
            )
        )

    def forward(self, doc: Any) -> Any:
        return ro.F.reduce(self.page(ro.F.expand(doc, domain="page")))


# -- object loss --------------------------------------------------------------------------
class CountedPages:
    """A document n has pages n*10 .. n*10 + n % 4 (at least one)."""

    def run(self, docs: list[int]) -> list[list[int]]:
        return [list(range(d * 10, d * 10 + 1 + d % 4)) for d in docs]


class Logged:
    """Logs each row under ``name`` and returns ``row + add``."""

    def __init__(self, log_dir: str, name: str, add: int) -> None:
        self.log_dir = log_dir
        self.name = name
        self.add = add

    def run(self, items: list[int]) -> list[int]:
        log(self.log_dir, self.name, items)
        return [i + self.add for i in items]


class Produced(ro.Pipeline):
    """expand -> render (logged) -> measure (logged) -> reduce: measure reads the
    payloads render left in the object store."""

    def __init__(self, log_dir: str) -> None:
        self.pages = ro.RayModule(CountedPages).ray_options(batch_size=4)
        self.render = ro.RayModule(Logged).pre_init(log_dir, "render", 1).ray_options(batch_size=3)
        self.measure = (
            ro.RayModule(Logged).pre_init(log_dir, "measure", 1000).ray_options(batch_size=3)
        )

    def forward(self, doc: Any) -> Any:
        return ro.F.reduce(self.measure(self.render(ro.F.expand(self.pages(doc)))))


# -- driver kill then resume ------------------------------------------------------------------
class Resumable:
    """Logs each row; row ``stop`` (while the file ``gate`` is absent) raises
    (``mode="raise"``) or blocks until the gate appears (``mode="block"``);
    ``mode="none"`` never stops. Returns ``row * row``."""

    def __init__(self, log_dir: str, mode: str, stop: int, gate: str) -> None:
        self.log_dir = log_dir
        self.mode = mode
        self.stop = stop
        self.gate = gate

    def run(self, items: list[int]) -> list[int]:
        log(self.log_dir, "run", items)
        if self.stop in items and not os.path.exists(self.gate):
            if self.mode == "raise":
                raise RuntimeError(f"staged exception at row {self.stop}")
            if self.mode == "block":
                wait_for_file(self.gate, "the resume")
        return [i * i for i in items]


class ResumePipeline(ro.Pipeline):
    """One Call ``square``; ``abort()`` makes an exception stop the run."""

    def __init__(
        self, log_dir: str = "", mode: str = "none", stop: int = -1, gate: str = ""
    ) -> None:
        recovery = ro.RecoveryPolicy.abort() if mode == "raise" else None
        options: dict[str, Any] = {"batch_size": 2, "replicas": 1}
        if recovery is not None:
            options["recovery"] = recovery
        self.square = (
            ro.RayModule(Resumable).pre_init(log_dir, mode, stop, gate).ray_options(**options)
        )

    def forward(self, x: Any) -> Any:
        return self.square(x)


# -- shared processes -----------------------------------------------------------------------
class WithPid:
    """Each row comes back as ``(row, pid of the process that ran it)``."""

    def run(self, items: list[Any]) -> list[tuple[Any, int]]:
        return [(i, os.getpid()) for i in items]


class Unwrap:
    """``(row, pid)`` rows back to the row; anything else passes through."""

    def run(self, items: list[Any]) -> list[Any]:
        return [i[0] if isinstance(i, tuple) else i for i in items]


class HeldSlotStarts(SharedProcess):
    """A shared process of ``SharedPair`` whose ``first`` slots never answer
    ``ready()`` when it is the process started right after row 5 first killed one
    (read from the ``FaultyRun`` log): its ``second`` slots come up and run row 5,
    alone, while its ``first`` slots are still starting, so the process dies with
    slots up and slots starting."""

    def __init__(self, slots: dict[str, Any]) -> None:
        super().__init__(slots)
        log_dir = next(spec[1][0] for key, spec in slots.items() if key.startswith("second"))
        self.hold = counts(log_dir, "run")["5"] == 1

    def ready(self, slot: str) -> tuple[int, str]:
        if self.hold and slot.startswith("first"):
            threading.Event().wait()  # until the process dies
        return super().ready(slot)


class SharedPair(ro.Pipeline):
    """``first`` -> ``second``, both with ``share_process=share`` (a name: that
    process; None: the default; False: processes of their own; ``first`` and
    ``second`` are ``(udf, pre_init args, ray_options)``)."""

    def __init__(
        self, share: str | bool | None, first: tuple[Any, ...], second: tuple[Any, ...]
    ) -> None:
        (u1, a1, o1), (u2, a2, o2) = first, second
        self.first = ro.RayModule(u1).pre_init(*a1).ray_options(share_process=share, **o1)
        self.second = ro.RayModule(u2).pre_init(*a2).ray_options(share_process=share, **o2)

    def forward(self, x: Any) -> Any:
        return self.second(self.first(x))
