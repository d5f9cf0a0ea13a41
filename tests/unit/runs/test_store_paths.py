"""Every run-store path is computed by ``runs.paths``: no other module spells one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import airflow_provider_rayorch
from airflow_provider_rayorch.runs import paths

PACKAGE = Path(airflow_provider_rayorch.__file__).parent
#: A literal that spells a store file's name or part of one.
_FILE = re.compile(r"\.(json|parquet)$|mb-|attempt-|^driver-|^report\.(html|json)$")
#: Folder names of the run store, refused as path parts outside ``paths``.
_FOLDERS = {"manifests", "repairs", "locks", "claims", "resumes", "outputs", "sources", "logs"}
_JOINS = {"join", "join_uri", "record_uri", "read_bytes", "write_bytes", "exists", "delete"}
#: (module, literal): why it is no run-store path.
ALLOWED = {
    ("common/head_logs.py", "stop.json"): "a loopback head's log folder on local disk",
    ("common/local_heads.py", ".json"): "the loopback head registry on local disk",
    ("common/local_heads.py", "*.json"): "the loopback head registry on local disk",
    ("common/local_heads.py", "ports.json"): "the loopback head registry on local disk",
    ("common/local_heads.py", "shared.json"): "the loopback head registry on local disk",
    ("lineage/summary.py", "RayOrchRunFacet.json"): "the facet schema shipped in the package",
    ("runs/run_manifest.py", "repairs"): "a run manifest's field, not a folder",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def path_literals(source: str) -> list[tuple[int, str]]:
    """The literals in ``source`` that spell a run-store file name, or a store folder
    given to a path-joining call or in a parts tuple ``(run_id, ...)`` (docstrings aside)."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and _FILE.search(node.value)
    ]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) in _JOINS:
            for arg in ast.walk(node):
                if isinstance(arg, ast.Constant) and arg.value in _FOLDERS:
                    found.append((arg.lineno, str(arg.value)))
        if isinstance(node, ast.Tuple) and node.elts and isinstance(node.elts[0], ast.Name):
            for elt in node.elts[1:]:
                if isinstance(elt, ast.Constant) and elt.value in _FOLDERS:
                    found.append((elt.lineno, str(elt.value)))
    return found


def test_no_module_but_paths_spells_a_store_path() -> None:
    offenders = []
    for file in sorted(PACKAGE.rglob("*.py")):
        module = file.relative_to(PACKAGE).as_posix()
        if module == "runs/paths.py":
            continue
        for line, literal in path_literals(file.read_text()):
            if (module, literal) not in ALLOWED:
                offenders.append(f"{module}:{line} {literal!r}")
    assert offenders == [], "compute these with airflow_provider_rayorch.runs.paths"


def test_the_scan_finds_a_path_spelled_by_hand() -> None:
    source = (
        "import posixpath\n"
        "def f(root, run_id, i):\n"
        '    """mb-00001.json in a docstring is fine."""\n'
        '    a = posixpath.join(root, run_id, "manifests", f"mb-{i:05d}.json")\n'
        '    b = (run_id, "locks", "x")\n'
    )
    literals = {literal for _, literal in path_literals(source)}
    assert literals == {"manifests", "mb-", ".json", "locks"}


def test_paths_lays_out_a_run() -> None:
    assert paths.manifest("r", 3) == ("r", "manifests", "mb-00003.json")
    assert paths.output_file("r", 3, 1, "out") == ("r", "outputs", "mb-00003", "out.parquet")
    assert paths.output_file("r", 3, 2, "out") == (
        "r",
        "outputs",
        "mb-00003",
        "attempt-2",
        "out.parquet",
    )
    assert paths.claim("r", 3, 2) == ("r", "repairs", "claims", "mb-00003-attempt-2.json")
    assert paths.listing_file("r", "L", 0) == ("r", "sources", "L", "mb-00000.parquet")
    assert paths.lease("r") == ("r", "locks", "repair.json")
    assert paths.driver_log("r", 2) == ("r", "logs", "driver-2.log")
    assert paths.repair("r", 12) == ("r", "repairs", "mb-00012.json")


def test_a_manifest_name_gives_its_index_and_nothing_else_does() -> None:
    assert paths.manifest_index("mb-00012.json") == 12
    assert paths.manifest_index("mb-00012.json.tmp-abc") is None
    assert paths.manifest_index("notes.json") is None
    assert paths.manifest_index("mb-.json") is None
