"""Every block of the pages under docs/ a user would copy is run by a test, or marked
``<!-- not-run: reason -->``; a block whose output a page shows prints it. This module
checks the markers of every page and runs the blocks that need no deployment
(``python``, ``with-run``, ``exports``, ``shell``); the deployment's blocks run in
tests/e2e/test_doc_blocks.py and tests/e2e/test_deployment_blocks.py, the cluster's in
tests/e2e/test_real_cluster.py and its neighbours (doc_blocks.CHECKS).
"""

from __future__ import annotations

import ast
import functools
import json
import os
from typing import TYPE_CHECKING

import pytest
from doc_blocks import (
    CHECKS,
    DOCS,
    GENERIC_KINDS,
    ROOT,
    RUN_PREAMBLE,
    RUN_STORE_PLACEHOLDER,
    VENV_PYTHON,
    Block,
    DocError,
    all_blocks,
    blocks_of,
    exported,
    normalize,
    parse,
    run_block,
    shows_excerpt,
)

if TYPE_CHECKING:
    import subprocess
    from pathlib import Path

EXAMPLES = ROOT / "dags_examples"
EXPORTED_CHECK = ROOT / "tests" / "docs" / "exported_check.py"


def test_every_page_parses_and_every_block_has_a_known_kind() -> None:
    blocks = all_blocks()
    pages = {b.page for b in blocks}
    assert pages >= {"airflow/getting-started.md", "monitoring.md", "workloads/adapters.md"}
    for block in (b for b in blocks if b.copyable):
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
        pytest.param("<!-- output -->\n```text\nx\n```\n", "must follow", id="output-alone"),
        pytest.param(
            "```python\nprint(1)\n```\n<!-- output -->\n```bash\n1\n```\n",
            "output is text or json",
            id="output-not-text",
        ),
        pytest.param(
            "```bash\ncurl x\n```\n<!-- output -->\n```text\nx\n```\n",
            "never compared",
            id="output-of-a-deployment-block",
        ),
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


def test_an_output_block_belongs_to_the_block_before_it(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```python\nprint(1)\n```\n\nIt prints:\n\n<!-- output -->\n```text\n1\n```\n")
    code, shown = parse(page)
    assert (code.kind, code.output) == ("python", "1\n")
    assert shown.kind == "output"


def test_normalize_keeps_all_but_times_ids_and_the_tests_paths() -> None:
    printed = "run 3f2b8c1e-0d4a-4c5e-9f6a-1b2c3d4e5f60 at 2026-12-04T20:41:07.123Z in /tmp/x/s\n"
    shown = "run <id> at <time> in /data/runs\n"
    assert normalize(printed, {"/tmp/x/s": "/data/runs"}) == shown
    assert normalize("3 rows\n") != normalize("4 rows\n")


def test_an_excerpt_matches_only_what_was_printed() -> None:
    printed = (
        "2026-12-04T21:20:04.303770Z [info     ] Run d.t.9f3a success: 4 sources [a.b] loc=x.py:1\n"
        '<time> [info     ] Lineage summary:\n{\n  "state": "success"} [a.b] loc=x.py:2\n'
    )
    assert shows_excerpt(
        printed, 'Run d.t.<hash> success: 4 sources\nLineage summary:\n{"state": "success"}'
    )
    assert not shows_excerpt(printed, "Run d.t.<hash> success: 5 sources")
    assert not shows_excerpt(printed, '{"state": "failed", ...}')


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


def _compare_output(
    block: Block, got: subprocess.CompletedProcess[str], paths: dict[str, str] | None = None
) -> None:
    """The printed output against the page's: exactly (stdout), or an excerpt (of
    everything printed: a task's log goes to stderr)."""
    if block.output is not None and block.excerpt:
        printed = got.stdout + got.stderr
        assert shows_excerpt(normalize(printed, paths), normalize(block.output)), (
            f"{block.id}: the page's excerpt of its output is not in what it printed:\n{printed}"
        )
    elif block.output is not None:
        printed = got.stdout
        assert normalize(printed, paths) == normalize(block.output), (
            f"{block.id} prints something else than the page shows"
        )


@pytest.mark.timeout(180)
@pytest.mark.parametrize("block", blocks_of("python"), ids=lambda b: b.id)
def test_python_blocks_run(block: Block, tmp_path: Path) -> None:
    got = run_block(block, block.text, env=_env(tmp_path), cwd=tmp_path, timeout=150)
    _compare_output(block, got)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("block", blocks_of("with-run"), ids=lambda b: b.id)
def test_blocks_that_read_a_run_run_on_a_small_real_run(block: Block, tmp_path: Path) -> None:
    store = tmp_path / "runs"
    env = _env(tmp_path)
    env["RAYORCH_DOC_RUN_STORE"] = str(store)
    conn = {"conn_type": "rayorch", "extra": {"run_store": str(store)}}
    env["AIRFLOW_CONN_RAYORCH_DEFAULT"] = json.dumps(conn)
    text = RUN_PREAMBLE + block.text.replace(RUN_STORE_PLACEHOLDER, str(store))
    got = run_block(block, text, env=env, cwd=tmp_path, timeout=150)
    _compare_output(block, got, {str(store): RUN_STORE_PLACEHOLDER})


def _run_exports(block: Block, tmp_path: Path) -> None:
    check = f'"{VENV_PYTHON}" "{EXPORTED_CHECK}" ' + " ".join(exported(block))
    run_block(block, block.text + check + "\n", env=_env(tmp_path), cwd=tmp_path, timeout=150)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("block", blocks_of("exports"), ids=lambda b: b.id)
def test_exported_variables_are_the_ones_airflow_reads(block: Block, tmp_path: Path) -> None:
    _run_exports(block, tmp_path)


@pytest.mark.timeout(180)
def test_a_misspelt_exported_variable_fails(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- run: exports -->\n```bash\nexport AIRFLOW__CORE__TEST_CONECTION=Enabled\n```\n"
    )
    (block,) = parse(page)
    with pytest.raises(AssertionError, match=r"no option \[core\] test_conection"):
        _run_exports(block, tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(420)
@pytest.mark.parametrize("block", blocks_of("shell"), ids=lambda b: b.id)
def test_shell_blocks_run(block: Block, tmp_path: Path) -> None:
    """From the checkout, as the pages say (``airflow dags test rayorch_minimal``
    included: the getting-started path end to end)."""
    got = run_block(block, block.text, env=_env(tmp_path), cwd=ROOT, timeout=400)
    _compare_output(block, got)


@pytest.mark.parametrize("block", blocks_of("not-run"), ids=lambda b: b.id)
def test_python_blocks_not_run_still_parse(block: Block) -> None:
    """A Python block left unrun (a GPU, a model download, a cluster) is still Python."""
    if block.lang in {"python", "py"}:
        compile(block.text, block.id, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def test_docs_folder_is_every_page_under_docs() -> None:
    assert DOCS == ROOT / "docs"


# -- named checks: a test of the file CHECKS names reaches one_block(name) ----------------


@functools.cache
def _functions() -> dict[str, list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]]:
    found: dict[str, list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.setdefault(node.name, []).append((rel, node))
    return found


def _uses(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names a function calls, and the fixtures it asks for (its parameters)."""
    names = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def _runs_block(fn: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.Call)
        and getattr(n.func, "id", None) == "one_block"
        and n.args
        and isinstance(n.args[0], ast.Constant)
        and n.args[0].value == name
        for n in ast.walk(fn)
    )


def reaching_tests(name: str) -> set[str]:
    """``file::test`` of every test function from which a call of ``one_block(name)``
    is reachable (calls and fixture parameters followed by name)."""
    functions = _functions()
    reaching = {
        fn_name for fn_name, defs in functions.items() if any(_runs_block(d, name) for _, d in defs)
    }
    grew = True
    while grew:
        before = len(reaching)
        reaching |= {
            fn_name
            for fn_name, defs in functions.items()
            if any(_uses(d) & reaching for _, d in defs)
        }
        grew = len(reaching) > before
    return {
        f"{path}::{fn_name}"
        for fn_name in reaching
        if fn_name.startswith("test_")
        for path, _ in functions[fn_name]
    }


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_each_named_check_is_run_by_a_test_of_the_file_it_names(name: str) -> None:
    tests = reaching_tests(name)
    assert any(t.startswith(CHECKS[name] + "::") for t in tests), (
        f"no test in {CHECKS[name]} runs `run: {name}` (tests that do: {sorted(tests)})"
    )
