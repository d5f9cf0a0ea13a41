"""Read a module's imports from its source (AST): module level, inside functions and
under ``if TYPE_CHECKING:``, relative ones resolved against the module's package."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import airflow_provider_rayorch

ROOT = Path(airflow_provider_rayorch.__file__).parent
PACKAGE = "airflow_provider_rayorch"


@dataclass(frozen=True)
class Import:
    """One imported name: ``target`` is the absolute dotted path (``a.b`` for
    ``from a import b``, whether ``b`` is a module or a name in ``a``)."""

    line: int
    target: str
    type_only: bool  # under ``if TYPE_CHECKING:``: never runs
    module_level: bool  # runs when the importing module is imported


def module_name(path: Path, root: Path = ROOT) -> str:
    """Dotted name of the module in ``path`` (a package's ``__init__`` is the package)."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def source_imports(source: str, package: str) -> list[Import]:
    """Every import in ``source``, a module of ``package`` (its dotted name)."""
    tree = ast.parse(source)
    type_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for inner in node.body:
                type_only.update(id(n) for n in ast.walk(inner))
    top = {id(n) for n in tree.body}
    for node in tree.body:  # statements under a module-level if/try still run at import
        if isinstance(node, (ast.If, ast.Try)):
            top.update(id(n) for n in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            names = [f"{name}.{alias.name}" for alias in node.names]
        found += [Import(node.lineno, n, id(node) in type_only, id(node) in top) for n in names]
    return found


def file_imports(path: Path, root: Path = ROOT) -> list[Import]:
    """The imports of the module in ``path``, relative ones resolved."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return source_imports(path.read_text(encoding="utf-8"), package)


def package_modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package under ``root``: dotted name -> file."""
    return {module_name(path, root): path for path in sorted(root.rglob("*.py"))}


def imported_module(target: str, modules: dict[str, Path]) -> str | None:
    """The package module an import target loads: the longest known prefix of it
    (``a.b.name`` -> ``a.b``), or None outside the package."""
    name = target
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None
