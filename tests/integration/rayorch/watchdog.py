"""A watchdog for runs that must end within a bound.

``within(seconds, what, fn, *args)`` runs ``fn`` in a daemon thread and joins it
with a deadline. When the deadline passes, every thread's stack is dumped with
``faulthandler`` (to stderr, which pytest shows) and the test fails at once, naming
the run and its bound: a hang costs seconds, not the CI budget. An exception out of
``fn`` is raised again in the caller, so ``pytest.raises`` works around ``within``.

``subprocess_within(seconds, what, argv, ...)`` does the same for a run in its own
process (started in a new session): past the deadline the whole process group is
killed and the test fails with the tail of its output.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

T = TypeVar("T")

__all__ = ["Finished", "measured_start_s", "subprocess_within", "wait_for", "within"]


def measured_start_s() -> float:
    """Seconds this machine takes, now, to start a Python process that imports Ray and
    the engine: what an actor start costs before its constructor runs. Bounds derived
    from it follow the machine's load in the same test run instead of a guessed figure."""
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-c", "import ray, airflow_provider_rayorch.rayorch"],
        check=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    return time.monotonic() - started


def within(seconds: float, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, failing the test if it has not returned in ``seconds``."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # re-raised in the caller
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"watched: {what}", daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        sys.stderr.write(f"\n--- watchdog: {what} still running after {seconds:.0f}s ---\n")
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        pytest.fail(
            f"{what} did not end within its bound of {seconds:.0f}s "
            f"(stacks of every thread dumped to stderr)",
            pytrace=False,
        )
    if "error" in box:
        raise box["error"]
    elapsed = time.monotonic() - started
    sys.stderr.write(f"watchdog: {what} ended in {elapsed:.1f}s (bound {seconds:.0f}s)\n")
    return box["value"]


class Finished:
    """A subprocess that ended on its own: its exit code and output."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    def tail(self) -> str:
        return (
            f"exit {self.returncode}\n--- stdout ---\n{self.stdout[-3000:]}"
            f"\n--- stderr ---\n{self.stderr[-4000:]}"
        )


def kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the process group ``proc`` leads (it was started in a new session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def subprocess_within(
    seconds: float,
    what: str,
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> Finished:
    """Run ``argv`` to its end; past ``seconds`` kill its process group and fail."""
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        stdout, stderr = proc.communicate()
        pytest.fail(
            f"{what} did not end within its bound of {seconds:.0f}s; killed.\n"
            + Finished(-9, stdout, stderr).tail(),
            pytrace=False,
        )
    return Finished(proc.returncode, stdout, stderr)


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail the test if it does not within ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {seconds:.0f}s", pytrace=False)
        time.sleep(0.05)
