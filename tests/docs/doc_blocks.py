"""The code blocks of docs/airflow/*.md that a user would copy, and how each is run.

A fenced block in ``bash``/``sh``/``shell``/``console`` or ``python``/``py`` is one a
user copies. Each is run by a test, unless an HTML comment on the line before its
fence says otherwise::

    <!-- not-run: why (a placeholder cluster address, an installer, ...) -->
    <!-- run: KIND -->

Without a comment a shell block runs as ``deployment`` and a Python block as
``python``. The kinds, and the test that runs them (each collects its blocks from the
pages, so a block cannot be left out):

- ``python``: the block as a script, with a throwaway ``AIRFLOW_HOME``
  (tests/docs/test_doc_pages.py).
- ``imports``: only the block's import statements: the names it documents exist
  (for snippets that need a running context, such as a run's summary).
- ``shell``: bash from the checkout, no deployment (tests/docs/test_doc_pages.py).
- ``deployment``: bash against the e2e deployment (tests/e2e/test_doc_blocks.py),
  after the page's ``run: deployment-token`` block (which sets ``$AIRFLOW`` and
  ``$TOKEN``), with ``AIRFLOW_HOME`` and the deployment's settings in the
  environment. Placeholders become the fixture's: ``127.0.0.1:8080`` its address,
  ``/tmp/rayorch-landing`` its landing folder, ``$RAY_AUTH_TOKEN`` a token, and
  ``rayorch_default`` a connection id of the test's own.
- named checks (``deployment-start``, ``repair-clear``, ``ingest-by-hand``,
  ``cluster-head``, ...): run by the test that owns the name, which also checks
  what the block did (``CHECKS`` says where).

Blocks in other languages (``text``, ``json``, none) show output or layout, not
commands, and are not run.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "airflow"

SHELL = frozenset({"bash", "sh", "shell", "console"})
PYTHON = frozenset({"python", "py"})
GENERIC_KINDS = frozenset({"python", "imports", "shell", "deployment"})
#: named checks -> the test file that runs (and checks) them
CHECKS = {
    "deployment-start": "tests/e2e/test_doc_blocks.py",
    "deployment-stop": "tests/e2e/test_doc_blocks.py",
    "deployment-token": "tests/e2e/test_doc_blocks.py",
    "ingest-by-hand": "tests/e2e/test_doc_blocks.py",
    "repair-clear": "tests/e2e/test_doc_blocks.py",
    "cluster-head": "tests/e2e/real_cluster.py",
    "cluster-worker": "tests/e2e/real_cluster.py",
    "cluster-token": "tests/e2e/real_cluster.py",
    "cluster-status": "tests/e2e/test_cluster_status.py",
    "cluster-connection": "tests/e2e/test_real_cluster.py",
}

_FENCE = re.compile(r"^(\s*)```\s*([\w+-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*(not-run|run)\s*:\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: str  # file name under docs/airflow
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    kind: str  # a run kind, or "not-run"
    reason: str = ""  # a not-run block's reason

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}:{self.kind}"

    @property
    def copyable(self) -> bool:
        return self.lang in SHELL | PYTHON


class DocError(AssertionError):
    """A docs page whose blocks break the rules above."""


def parse(path: Path) -> list[Block]:
    """Every fenced block of one page, with its kind."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, lang = opening.group(1), opening.group(2).lower()
        end = next(
            (j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"),
            None,
        )
        if end is None:
            raise DocError(f"{path.name}:{i + 1}: a code block is never closed")
        body = "\n".join(ln.removeprefix(indent) for ln in lines[i + 1 : end]) + "\n"
        marker = _MARKER.match(lines[i - 1]) if i else None
        kind, reason = _kind(path, i + 1, lang, marker)
        blocks.append(Block(path.name, i + 1, lang, body, kind, reason))
        i = end + 1
    return blocks


def _kind(path: Path, line: int, lang: str, marker: re.Match[str] | None) -> tuple[str, str]:
    where = f"{path.name}:{line}"
    if marker is None:
        if lang in SHELL:
            return "deployment", ""
        return ("python", "") if lang in PYTHON else ("output", "")
    verb, value = marker.group(1), marker.group(2)
    if lang not in SHELL | PYTHON:
        raise DocError(f"{where}: a `{verb}` marker on a {lang or 'plain'} block, which never runs")
    if verb == "not-run":
        if not value:
            raise DocError(f"{where}: `<!-- not-run: ... -->` needs a reason")
        return "not-run", value
    if value not in GENERIC_KINDS and value not in CHECKS:
        known = sorted(GENERIC_KINDS | set(CHECKS))
        raise DocError(f"{where}: unknown run kind {value!r}; known: {known}")
    return value, ""


def all_blocks() -> list[Block]:
    return [b for page in sorted(DOCS.glob("*.md")) for b in parse(page)]


def blocks_of(kind: str) -> list[Block]:
    return [b for b in all_blocks() if b.kind == kind]


def one_block(kind: str) -> Block:
    """The one block of a named check (each name marks exactly one block)."""
    found = blocks_of(kind)
    if len(found) != 1:
        raise DocError(f"{len(found)} blocks are marked `run: {kind}`; expected one")
    return found[0]


def import_lines(source: str) -> str:
    """Only the import statements of a Python block, as a script."""
    tree = ast.parse(source)
    kept = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    return "\n".join(ast.unparse(node) for node in kept) + "\n"


def commands(block: Block) -> list[list[str]]:
    """A shell block's commands as argument lists (continuations joined, comments and
    blank lines dropped), for comparing a documented command with a test's."""
    joined = re.sub(r"\\\n\s*", " ", block.text)
    return [shlex.split(ln, comments=True) for ln in joined.splitlines() if ln.strip()]


# -- running blocks ----------------------------------------------------------------------

#: the venv's ``airflow``, ``ray`` and ``python`` come first, as after ``source .venv/bin/activate``
VENV_PYTHON = sys.executable
VENV_BIN = str(Path(sys.executable).parent)


def with_venv_path(env: dict[str, str]) -> dict[str, str]:
    return {**env, "PATH": os.pathsep.join([VENV_BIN, env.get("PATH", "")])}


def run_text(
    argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float, what: str
) -> subprocess.CompletedProcess[str]:
    """Run a block's program in a session of its own; on a timeout stop that session's
    process group (and nothing else) and fail naming the block."""
    proc = subprocess.Popen(
        argv,
        env=with_venv_path(env),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"{what} did not finish within {timeout:g}s:\n{out}{err}") from None
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def run_block(
    block: Block, text: str, *, env: dict[str, str], cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run a block (after substitutions: ``text``) as the user would paste it: shell
    blocks in ``bash -e -u -o pipefail``, Python blocks as a script. Fails with the
    block's page and line unless it exits 0."""
    if block.lang in SHELL:
        argv = ["bash", "-euo", "pipefail", "-c", text]
    else:
        argv = [VENV_PYTHON, "-c", text]
    got = run_text(argv, env=env, cwd=cwd, timeout=timeout, what=block.id)
    assert got.returncode == 0, (
        f"{block.id}: the block exited {got.returncode}\n----- block -----\n{text}"
        f"----- stdout -----\n{got.stdout[-4000:]}\n----- stderr -----\n{got.stderr[-4000:]}"
    )
    return got
