"""The benchmark harness has no import cycles, and every module imports on its own.

The graph is read from the source (every ``import`` statement, at any depth:
a function-level import closes a cycle as surely as a top-level one), so a
cycle fails here before it fails at run time in one import order only.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "benchmarks"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(current: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """The harness modules one ``from ... import ...`` statement imports."""
    if node.level:
        base = current.split(".") if is_package else current.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, node.module] if node.module else base)
    else:
        target = node.module or ""
    names = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
    return names or ([target] if target in MODULES else [])


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name in MODULES}
            elif isinstance(node, ast.ImportFrom):
                edges |= set(_resolve(name, path.name == "__init__.py", node))
        graph[name] = edges - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that ends where it starts, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_graph_sees_relative_and_function_level_imports() -> None:
    graph = import_graph()
    assert "benchmarks.workload" in graph["benchmarks.measure"]  # top level, relative
    assert "benchmarks.simulator" in graph["benchmarks.sections"]  # inside a function
    assert "benchmarks.systems.rayorch" in graph["benchmarks.sections"]  # from . import x


def test_benchmarks_have_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_module_imports_in_isolation(name: str) -> None:
    """With no other harness module loaded; a third-party package that is not installed
    here (the peers, cosmos-xenna outside its venv) skips the module."""
    for loaded in [m for m in sys.modules if m == "benchmarks" or m.startswith("benchmarks.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == "benchmarks" or exc.name.startswith("benchmarks.")):
            raise
        pytest.skip(f"{name} needs {exc.name}, not installed here")
