"""The scale benchmark's job path measures the job entrypoint's own process: its peak
RSS is that process's, not the memory of the process that starts it."""

from __future__ import annotations

import os

import pytest

from benchmarks.scale import run_job_process

#: what the stand-in entrypoint allocates, and what its caller holds meanwhile (MB)
CHILD_MB = 32
CALLER_MB = 192

ENTRYPOINT = f"""
import sys

args = sys.argv[1:]
assert args[0::2] == ["--run-store", "--run-id"], args
kept = bytearray({CHILD_MB} * 2**20)  # zero-filled: every page touched
print("ran", args[3])
sys.exit(3 if args[3] == "failing" else 0)
"""


@pytest.fixture
def entrypoint_env(tmp_path) -> dict[str, str]:
    """An environment importing ``fake_job``, a stand-in entrypoint allocating CHILD_MB."""
    (tmp_path / "fake_job.py").write_text(ENTRYPOINT)
    paths = [str(tmp_path), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def test_the_peak_rss_is_the_entrypoint_process_own(tmp_path, entrypoint_env) -> None:
    held = bytearray(CALLER_MB * 2**20)  # the caller's memory, never the driver's

    _seconds, peak_mb = run_job_process(str(tmp_path), "run", entrypoint_env, module="fake_job")

    assert len(held) == CALLER_MB * 2**20
    assert CHILD_MB <= peak_mb < CALLER_MB


def test_a_failed_entrypoint_raises_with_its_output(tmp_path, entrypoint_env) -> None:
    with pytest.raises(RuntimeError, match="exited 3 on failing: ran failing"):
        run_job_process(str(tmp_path), "failing", entrypoint_env, module="fake_job")
