"""Load beside a test: busy-loop processes, as on the shared or busy machine where
users run a loopback Ray head. Each is stopped by its own pid when the block ends."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

#: The machine CI runs on has two cores: two burners keep both busy.
BURNERS = 2
#: Burns a CPU while its parent (the pid it is given) lives: a test process killed
#: outright (SIGKILL, a ``timeout``) never runs its ``finally``, and its burners must
#: not outlive it.
_BURN = "import os, sys\nwhile os.getppid() == int(sys.argv[1]): pass"


@contextlib.contextmanager
def cpu_burners(count: int = BURNERS) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` processes burning a CPU each while the block runs."""
    procs = [
        subprocess.Popen([sys.executable, "-c", _BURN, str(os.getpid())], start_new_session=True)
        for _ in range(count)
    ]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait(timeout=30)
