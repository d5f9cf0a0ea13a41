"""The README's commands and code run as written.

Its Python block runs as a script (on a Ray it starts itself, in a HOME of the
test's own) and prints exactly the ``text`` block that follows it. Its quick-start
commands are the ones CI runs: ``.ci/run`` is the test command, and the main job's
command runs in tests/integration/dags (``bash scripts/main-job.sh DAG_ID``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from doc_blocks import ROOT

if TYPE_CHECKING:
    from pathlib import Path

README = ROOT / "README.md"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _blocks(lang: str) -> list[re.Match[str]]:
    return [m for m in _BLOCK.finditer(README.read_text()) if m.group(1) == lang]


def _output_after(code: re.Match[str]) -> str:
    """The ``text`` block right after the block ``code`` (prose between them)."""
    following = _BLOCK.search(README.read_text(), code.end())
    assert following, "no block after the code"
    assert following.group(1) == "text", "the block after the code is not its output"
    return following.group(2)


@pytest.mark.timeout(300)
def test_the_engine_example_prints_what_the_readme_says(tmp_path: Path) -> None:
    (code,) = _blocks("python")
    script = tmp_path / "example.py"
    script.write_text(code.group(2))
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    got = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
        stdin=subprocess.DEVNULL,
    )
    assert got.returncode == 0, got.stderr[-4000:]
    assert got.stdout == _output_after(code), got.stderr[-2000:]


def test_the_quick_start_commands_are_the_ones_ci_and_the_tests_run() -> None:
    (quick_start,) = [b.group(2) for b in _blocks("bash") if "scripts/setup.sh" in b.group(2)]
    commands = [line for line in quick_start.splitlines() if line and not line.startswith("#")]
    assert commands == [
        "bash scripts/setup.sh && bash scripts/main-job.sh",
        "bash scripts/setup.sh && bash scripts/test.sh",
    ]
    assert "bash scripts/setup.sh && bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    runner = (ROOT / "tests" / "integration" / "dags" / "conftest.py").read_text()
    assert '"scripts" / "main-job.sh"' in runner, "the main job's command must run in a test"
