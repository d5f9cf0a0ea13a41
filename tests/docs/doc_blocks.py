"""The code blocks of the pages under docs/ that a user would copy, and how each is run.

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
- ``with-run``: a Python block that reads a run, after :data:`RUN_PREAMBLE`: it makes a
  small real run (``TextDocPipeline`` of dags_examples, local backend) in a throwaway
  run store and defines what such snippets use: ``summary`` (the run's lineage
  summary), ``run_id``, ``timeline``, ``calls`` and ``done`` (the run's measurements
  and finished microbatches, as the driver hands them to its report), with the
  connection ``rayorch_default`` (no host: embedded) on that store. The placeholder
  store ``/data/runs`` becomes that store.
- ``exports``: a block of ``export`` lines only (which cannot fail by itself), run
  in bash, after which each variable is read back the way Airflow reads it:
  ``AIRFLOW__SECTION__KEY`` must be an option Airflow's configuration describes and
  ``airflow.configuration.conf`` must return the exported value;
  ``AIRFLOW_CONN_<ID>`` must be a ``rayorch`` connection ``<id>`` that
  ``RayOrchHook`` reads. A misspelt variable fails.
- ``shell``: bash from the checkout, no deployment (tests/docs/test_doc_pages.py).
- ``deployment``: bash against the e2e deployment (tests/e2e/test_doc_blocks.py),
  after the page's ``run: deployment-token`` block (which sets ``$AIRFLOW`` and
  ``$TOKEN``), with ``AIRFLOW_HOME`` and the deployment's settings in the
  environment. Placeholders become the fixture's: ``127.0.0.1:8080`` its address,
  ``/tmp/rayorch-landing`` its landing folder, ``$RAY_AUTH_TOKEN`` a token, and
  ``rayorch_default`` a connection id of the test's own.
- named checks (``deployment-start``, ``repair-clear``, ``ingest-by-hand``,
  ``cluster-head``, ...): run by a test of the file ``CHECKS`` names, which also
  checks what the block did.

A block's documented output is the ``text``/``json`` (or plain) block right after it,
marked ``<!-- output -->`` on the line before its fence (prose may stand between the
two). The test compares what the block printed with it, after :func:`normalize`
(times, ids and the test's own paths only). ``<!-- output: excerpt -->`` marks an
excerpt of a longer output (a task's log): it must appear in what the block printed,
where ``...`` stands for anything, ``<name>`` for one varying word (a hash); the
layout (whitespace) and a log line's decoration (its time, level, logger and
``loc=``) are not compared (:func:`shows_excerpt`).

Blocks in other languages (``text``, ``json``, none) show output or layout, not
commands, and are not run.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

SHELL = frozenset({"bash", "sh", "shell", "console"})
PYTHON = frozenset({"python", "py"})
OUTPUT = frozenset({"text", "json", ""})
GENERIC_KINDS = frozenset({"python", "with-run", "exports", "shell", "deployment"})
#: named checks -> the test file that runs (and checks) them
CHECKS = {
    "deployment-start": "tests/e2e/test_deployment_blocks.py",
    "deployment-stop": "tests/e2e/test_deployment_blocks.py",
    "deployment-token": "tests/e2e/test_doc_blocks.py",
    "ingest-by-hand": "tests/e2e/test_doc_blocks.py",
    "repair-clear": "tests/e2e/test_doc_blocks.py",
    "cluster-head": "tests/e2e/test_real_cluster.py",
    "cluster-worker": "tests/e2e/test_cluster_node_loss.py",
    "cluster-token": "tests/e2e/test_real_cluster.py",
    "cluster-status": "tests/e2e/test_cluster_status.py",
    "cluster-connection": "tests/e2e/test_real_cluster.py",
}

_FENCE = re.compile(r"^(\s*)```\s*([\w+-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*(not-run|run)\s*:\s*(.*?)\s*-->\s*$")
_OUTPUT_MARKER = re.compile(r"^\s*<!--\s*output(\s*:\s*excerpt)?\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: str  # path under docs/, e.g. "airflow/connection.md"
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    kind: str  # a run kind, "not-run", or "output"
    reason: str = ""  # a not-run block's reason
    output: str | None = None  # the documented output (the `<!-- output -->` block after it)
    excerpt: bool = False  # the output is an excerpt (`<!-- output: excerpt -->`)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}:{self.kind}"

    @property
    def copyable(self) -> bool:
        return self.lang in SHELL | PYTHON


class DocError(AssertionError):
    """A docs page whose blocks break the rules above."""


def _page_name(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return path.resolve().relative_to(DOCS).as_posix()
    return path.name


def parse(path: Path) -> list[Block]:
    """Every fenced block of one page, with its kind and documented output."""
    lines = path.read_text().splitlines()
    page = _page_name(path)
    blocks: list[Block] = []
    i = 0
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
            raise DocError(f"{page}:{i + 1}: a code block is never closed")
        body = "\n".join(ln.removeprefix(indent) for ln in lines[i + 1 : end]) + "\n"
        before = lines[i - 1] if i else ""
        if output := _OUTPUT_MARKER.match(before):
            _attach_output(blocks, page, i + 1, lang, body, excerpt=bool(output.group(1)))
        else:
            kind, reason = _kind(page, i + 1, lang, _MARKER.match(before))
            blocks.append(Block(page, i + 1, lang, body, kind, reason))
        i = end + 1
    return blocks


def _attach_output(
    blocks: list[Block], page: str, line: int, lang: str, body: str, *, excerpt: bool
) -> None:
    """An ``<!-- output -->`` block belongs to the code block right before it."""
    where = f"{page}:{line}"
    if lang not in OUTPUT:
        raise DocError(f"{where}: `<!-- output -->` marks a {lang} block; output is text or json")
    if not blocks or not blocks[-1].copyable or blocks[-1].output is not None:
        raise DocError(f"{where}: `<!-- output -->` must follow the code block that prints it")
    if blocks[-1].kind not in {"python", "with-run", "shell"}:
        raise DocError(f"{where}: the output of a `{blocks[-1].kind}` block is never compared")
    blocks[-1] = replace(blocks[-1], output=body, excerpt=excerpt)
    blocks.append(Block(page, line, lang, body, "output"))


def _kind(page: str, line: int, lang: str, marker: re.Match[str] | None) -> tuple[str, str]:
    where = f"{page}:{line}"
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


def pages() -> list[Path]:
    """Every page under docs/, sub-folders included."""
    return sorted(DOCS.rglob("*.md"))


def all_blocks() -> list[Block]:
    return [b for page in pages() for b in parse(page)]


def blocks_of(kind: str) -> list[Block]:
    return [b for b in all_blocks() if b.kind == kind]


def one_block(kind: str) -> Block:
    """The one block of a named check (each name marks exactly one block)."""
    found = blocks_of(kind)
    if len(found) != 1:
        raise DocError(f"{len(found)} blocks are marked `run: {kind}`; expected one")
    return found[0]


def commands(block: Block) -> list[list[str]]:
    """A shell block's commands as argument lists (continuations joined, comments and
    blank lines dropped), for comparing a documented command with a test's."""
    joined = re.sub(r"\\\n\s*", " ", block.text)
    return [shlex.split(ln, comments=True) for ln in joined.splitlines() if ln.strip()]


def exported(block: Block) -> list[str]:
    """The variables an ``exports`` block exports; fails unless it only exports."""
    names = []
    for word in shlex.split(block.text, comments=True):
        assignment = re.match(r"([A-Za-z_]\w*)=", word)
        if assignment:
            names.append(assignment.group(1))
        elif word != "export":
            raise DocError(f"{block.id}: an `exports` block holds only `export NAME=value` lines")
    return names


_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?")
_ID = re.compile(r"\b[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\b")


def normalize(text: str, paths: dict[str, str] | None = None) -> str:
    """Output as compared with a page's: each of the test's own ``paths`` becomes the
    placeholder the page shows for it, ISO-8601 times become ``<time>`` and UUID-shaped
    ids ``<id>`` (on both sides). Nothing else varies: every other character counts."""
    for actual, shown in (paths or {}).items():
        text = text.replace(actual, shown)
    return _ID.sub("<id>", _TIME.sub("<time>", text))


_ELLIPSIS_OR_PLACEHOLDER = re.compile(r"(\.\.\.|<[\w-]+>)")


_LOG_PREFIX = re.compile(r"^\s*(?:<time>|\d{4}-\d\d-\d\dT\S+)\s+\[\s*\w+\s*\]\s?", re.MULTILINE)
_LOG_SUFFIX = re.compile(r"\s+\[[\w.]+\]\s+loc=\S+[^\n]*$", re.MULTILINE)


def shows_excerpt(printed: str, excerpt: str) -> bool:
    """Whether ``excerpt`` appears in ``printed``: ``...`` is anything, ``<name>`` a
    varying word; log decorations and whitespace are ignored, every other character
    counts."""
    printed = _LOG_SUFFIX.sub("", _LOG_PREFIX.sub("", printed))
    parts = _ELLIPSIS_OR_PLACEHOLDER.split(re.sub(r"\s+", "", excerpt))
    pattern = "".join(
        ".*?" if part == "..." else r"[^\s\"]+?" if part.startswith("<") else re.escape(part)
        for part in parts
        if part
    )
    return re.search(pattern, re.sub(r"\s+", "", printed), re.DOTALL) is not None


#: What a ``with-run`` block runs after (see the module docstring). Its run's own
#: output is swallowed, so a block's documented output is compared alone.
RUN_PREAMBLE = """\
import contextlib as _contextlib
import io as _io
import os as _os
import types as _types

from airflow_provider_rayorch.runs import driver as _driver
from airflow_provider_rayorch.runs import pipeline_load as _pipeline_load
from airflow_provider_rayorch.runs.store import PlanRecord as _PlanRecord
from airflow_provider_rayorch.runs.store import RunStore as _RunStore


def _small_run():
    from rayorch_example_pipelines import sample_docs

    spec = "rayorch_example_pipelines:TextDocPipeline"
    store = _RunStore(_os.environ["RAYORCH_DOC_RUN_STORE"])
    compiled = _pipeline_load.import_factory(spec)().compile()
    store.write_plan(
        _PlanRecord(
            run_id="doc-run",
            pipeline=spec,
            fingerprint=compiled.fingerprint,
            sources=sample_docs(4),
            input_batch_size=2,
            pipeline_kwargs={},
            backend="local",
            semantic_fingerprint=compiled.semantic_fingerprint,
            semantic=compiled.semantic_record(),
        )
    )
    seen = {}

    def report(store, run_id, timeline, calls, *, microbatches):
        seen.update(timeline=timeline, calls=calls, microbatches=microbatches or [])
        return ""

    with _contextlib.redirect_stdout(_io.StringIO()):
        summary = _driver.run_plan(store, "doc-run", report=report)
    return summary, seen


summary, _seen = _small_run()
run_id = summary["run_id"]
timeline, calls = _seen["timeline"], _seen["calls"]
done = [
    _types.SimpleNamespace(index=m["index"], metrics={k: v for k, v in m.items() if k != "index"})
    for m in _seen["microbatches"]
]
"""
#: The run store a ``with-run`` block's page shows, replaced by the preamble's.
RUN_STORE_PLACEHOLDER = "/data/runs"


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
