"""Running a command to its end from a test, in a session of its own."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path


def run_in_own_session(
    argv: Sequence[str], *, env: Mapping[str, str], timeout: float, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in a new session (a signal to its process group never reaches the
    test's), its output captured as text, for ``timeout`` seconds at most; its exit code
    is the caller's to judge."""
    return subprocess.run(
        list(argv),
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        start_new_session=True,
    )
