"""The package's imports point down the layer table (``layers.toml``) and form no cycle.

Every ``.py`` file of the package is read as source (AST): imports at module level,
inside functions and under ``if TYPE_CHECKING:`` all count against the table. A cycle
is a loop of imports that run (``TYPE_CHECKING`` ones never do); a function-level
import is part of the loop, since it runs when the function is called.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.unit.package_imports import (
    PACKAGE,
    ROOT,
    file_imports,
    imported_module,
    package_modules,
    source_imports,
)

TABLE = Path(__file__).with_name("layers.toml")

#: (line, importing module, imported module, type only)
Edge = tuple[int, str, str, bool]


def read_table(path: Path = TABLE) -> dict[str, int]:
    """Unit (a module path relative to the package) -> its row, lowest first."""
    rows = tomllib.loads(path.read_text(encoding="utf-8"))["layer"]
    units = {unit: rank for rank, row in enumerate(rows) for unit in row["units"]}
    assert len(units) == sum(len(row["units"]) for row in rows), "a unit is listed twice"
    return units


def unit_of(module: str, units: dict[str, int]) -> str | None:
    """The longest unit that prefixes ``module``; ``__init__`` is the root module."""
    rel = module[len(PACKAGE) + 1 :] if module != PACKAGE else "__init__"
    while rel and rel not in units:
        rel = rel.rpartition(".")[0]
    return rel or None


def package_edges(modules: dict[str, Path]) -> list[Edge]:
    edges = []
    for name, path in modules.items():
        for imp in file_imports(path):
            target = imported_module(imp.target, modules)
            if target is not None and target != name:
                edges.append((imp.line, name, target, imp.type_only))
    return edges


def against_the_table(edges: list[Edge], units: dict[str, int]) -> list[str]:
    """Each import of a unit that is not the importer's own nor in a lower row."""
    bad = []
    for line, source, target, _ in edges:
        mine, theirs = unit_of(source, units), unit_of(target, units)
        if mine is None or theirs is None or mine == theirs:
            continue
        if units[theirs] >= units[mine]:
            bad.append(f"{source}:{line}: imports {target} ({mine} may not import {theirs})")
    return bad


def cycles(edges: list[Edge]) -> list[list[str]]:
    """Strongly connected groups of modules (two or more) over imports that run."""
    graph: dict[str, set[str]] = {}
    for _, source, target, type_only in edges:
        if not type_only:
            graph.setdefault(source, set()).add(target)
            graph.setdefault(target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = stack[stack.index(node) :]
                    del stack[stack.index(node) :]
                    if len(group) > 1:
                        found.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in stack:
                low[node] = min(low[node], index[child])
    return found


def describe(group: list[str], edges: list[Edge], modules: dict[str, Path]) -> str:
    members = set(group)
    lines = sorted(
        {
            f"  {modules[source].relative_to(ROOT.parent)}:{line}: imports {target}"
            for line, source, target, type_only in edges
            if not type_only and source in members and target in members
        }
    )
    return "cycle between " + ", ".join(group) + ":\n" + "\n".join(lines)


def test_every_module_has_a_row_in_the_table() -> None:
    units = read_table()
    modules = package_modules()
    assert len(modules) > 50
    missing = sorted(m for m in modules if unit_of(m, units) is None)
    assert not missing, f"modules without a unit in {TABLE.name}: {missing}"


def test_every_import_points_down_the_table() -> None:
    modules = package_modules()
    bad = against_the_table(package_edges(modules), read_table())
    assert not bad, "imports against the layer table:\n" + "\n".join(bad)


def test_no_import_cycle() -> None:
    modules = package_modules()
    edges = package_edges(modules)
    found = [describe(group, edges, modules) for group in cycles(edges)]
    assert not found, "\n".join(found)


# -- the checks can fail -------------------------------------------------------------
def test_a_relative_import_inside_a_function_is_an_upward_arrow() -> None:
    imports = source_imports("def f():\n    from ..reports import writer\n", f"{PACKAGE}.runs")
    modules = {f"{PACKAGE}.runs.driver": Path(), f"{PACKAGE}.reports.writer": Path()}
    edges: list[Edge] = [
        (i.line, f"{PACKAGE}.runs.driver", str(imported_module(i.target, modules)), i.type_only)
        for i in imports
    ]
    assert edges == [(2, f"{PACKAGE}.runs.driver", f"{PACKAGE}.reports.writer", False)]
    assert against_the_table(edges, read_table()) == [
        f"{PACKAGE}.runs.driver:2: imports {PACKAGE}.reports.writer (runs may not import reports)"
    ]


def test_a_type_only_import_counts_against_the_table_but_not_as_a_cycle() -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .hooks import x\n"
    (imp,) = [i for i in source_imports(source, PACKAGE) if i.target.startswith(PACKAGE)]
    assert imp.type_only
    a, b = f"{PACKAGE}.common.x", f"{PACKAGE}.hooks.x"
    assert against_the_table([(3, a, b, True)], read_table())
    assert cycles([(3, a, b, True), (1, b, a, False)]) == []


def test_units_of_one_row_do_not_import_each_other() -> None:
    a, b = f"{PACKAGE}.reports.page", f"{PACKAGE}.lineage.tasks"
    assert against_the_table([(1, a, b, False)], read_table())


def test_a_loop_through_a_function_level_import_is_a_cycle() -> None:
    edges: list[Edge] = [(1, "m.a", "m.b", False), (9, "m.b", "m.c", False)]
    assert cycles(edges) == []
    assert cycles([*edges, (5, "m.c", "m.a", False)]) == [["m.a", "m.b", "m.c"]]


@pytest.mark.parametrize(
    ("module", "unit"),
    [
        (PACKAGE, "__init__"),
        (f"{PACKAGE}.rayorch", "rayorch"),
        (f"{PACKAGE}.rayorch.errors", "rayorch.errors"),
        (f"{PACKAGE}.rayorch.runtime.core", "rayorch.runtime"),
        (f"{PACKAGE}.runs.driver", "runs"),
    ],
)
def test_a_module_belongs_to_the_longest_unit_that_prefixes_it(module: str, unit: str) -> None:
    assert unit_of(module, read_table()) == unit
