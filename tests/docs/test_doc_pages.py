"""Issue 19 (3): every block of docs/airflow/ a user would copy is run by a test, or
marked ``<!-- not-run: reason -->``. This module checks the markers of every page and
runs the blocks that need no deployment (``python``, ``imports``, ``shell``); the
deployment's blocks run in tests/e2e/test_doc_blocks.py, the cluster's in
tests/e2e/test_real_cluster.py (doc_blocks.CHECKS).
"""

from __future__ import annotations

import os
import textwrap
from typing import TYPE_CHECKING

import pytest
from doc_blocks import (
    CHECKS,
    DOCS,
    GENERIC_KINDS,
    ROOT,
    DocError,
    all_blocks,
    blocks_of,
    import_lines,
    parse,
    run_block,
)

if TYPE_CHECKING:
    from pathlib import Path

EXAMPLES = ROOT / "dags_examples"


def test_every_page_parses_and_every_block_has_a_known_kind() -> None:
    blocks = all_blocks()
    assert {b.page for b in blocks} >= {"getting-started.md", "repair.md", "real-cluster.md"}
    copyable = [b for b in blocks if b.copyable]
    for block in copyable:
        assert block.kind in GENERIC_KINDS | set(CHECKS) | {"not-run"}, block.id
        if block.kind == "not-run":
            assert block.reason, block.id


def test_each_named_check_marks_exactly_one_block() -> None:
    kinds = [b.kind for b in all_blocks()]
    assert {name: kinds.count(name) for name in CHECKS} == dict.fromkeys(CHECKS, 1)


@pytest.mark.parametrize(
    ("markdown", "error"),
    [
        pytest.param(
            "<!-- not-run: -->\n```bash\nls\n```\n", "needs a reason", id="not-run-no-reason"
        ),
        pytest.param("<!-- run: bogus -->\n```bash\nls\n```\n", "unknown run kind", id="bad-kind"),
        pytest.param(
            "<!-- run: shell -->\n```json\n{}\n```\n", "never runs", id="marker-on-output"
        ),
        pytest.param("```bash\nls\n", "never closed", id="unclosed"),
    ],
)
def test_a_bad_marker_fails_naming_the_page_and_line(
    tmp_path: Path, markdown: str, error: str
) -> None:
    page = tmp_path / "page.md"
    page.write_text("# a page\n\n" + markdown)
    with pytest.raises(DocError, match=error) as caught:
        parse(page)
    assert "page.md:" in str(caught.value)


def test_unmarked_blocks_run_by_default(tmp_path: Path) -> None:
    """A block with no marker is run (a shell block on the deployment), never skipped."""
    page = tmp_path / "page.md"
    page.write_text("```bash\ncurl x\n```\n\n```python\nimport os\n```\n\n```text\nout\n```\n")
    assert [(b.lang, b.kind) for b in parse(page)] == [
        ("bash", "deployment"),
        ("python", "python"),
        ("text", "output"),
    ]


def _env(tmp_path: Path) -> dict[str, str]:
    """A user's shell in the checkout: a throwaway AIRFLOW_HOME, the examples on the
    path, no Ray or Airflow variable of this process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RAY_"))}
    env.update(
        HOME=str(tmp_path / "home"),
        AIRFLOW_HOME=str(tmp_path / "airflow-home"),
        PYTHONPATH=str(EXAMPLES),
        RAY_USAGE_STATS_ENABLED="0",
    )
    return env


@pytest.mark.timeout(180)
@pytest.mark.parametrize("block", blocks_of("python"), ids=lambda b: b.id)
def test_python_blocks_run(block, tmp_path: Path) -> None:
    run_block(block, block.text, env=_env(tmp_path), cwd=tmp_path, timeout=150)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("block", blocks_of("imports"), ids=lambda b: b.id)
def test_the_names_python_snippets_import_exist(block, tmp_path: Path) -> None:
    imports = import_lines(block.text)
    assert imports.strip(), f"{block.id} is marked `imports` but imports nothing"
    run_block(block, imports, env=_env(tmp_path), cwd=tmp_path, timeout=150)


@pytest.mark.slow
@pytest.mark.timeout(420)
@pytest.mark.parametrize("block", blocks_of("shell"), ids=lambda b: b.id)
def test_shell_blocks_run(block, tmp_path: Path) -> None:
    """From the checkout, as the pages say (``airflow dags test rayorch_minimal``
    included: the getting-started path end to end)."""
    run_block(block, block.text, env=_env(tmp_path), cwd=ROOT, timeout=400)


def test_import_lines_keeps_only_imports() -> None:
    source = textwrap.dedent(
        """
        from a import b
        import c.d
        x = b(...)
        """
    )
    assert import_lines(source) == "from a import b\nimport c.d\n"


def test_docs_folder_is_the_airflow_pages() -> None:
    assert DOCS == ROOT / "docs" / "airflow"


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_each_named_check_is_run_by_the_test_file_it_names(name: str) -> None:
    source = (ROOT / CHECKS[name]).read_text()
    assert f'one_block("{name}")' in source, f"{CHECKS[name]} never runs `run: {name}`"
