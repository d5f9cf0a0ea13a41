"""Import bans: the package root stays light, the runtime core stays pure.

* ``import airflow_provider_rayorch`` and ``import airflow_provider_rayorch.rayorch``
  never import airflow (every Ray actor imports them), checked in a fresh process.
* The program and runtime layers (``program/*``, ``runtime/*`` and every engine
  module they import) import neither ray nor airflow nor anything that does I/O
  or concurrency, and never sleep; checked on their source (AST), so a lazy
  import inside a function is caught as well.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import airflow_provider_rayorch.rayorch as ro

ENGINE = Path(ro.__file__).parent
PACKAGE = "airflow_provider_rayorch.rayorch"
PURE_LAYERS = ("program", "runtime")
BANNED = {
    "ray",
    "airflow",
    "asyncio",
    "threading",
    "multiprocessing",
    "subprocess",
    "socket",
    "requests",
    "httpx",
    "urllib",
    "pyarrow",
    "pendulum",
}


def fresh_modules(code: str) -> set[str]:
    """Top-level names of the modules imported by ``code`` in a fresh interpreter."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return {name.split(".")[0] for name in json.loads(out.stdout.splitlines()[-1])}


@pytest.mark.parametrize(
    "code",
    [
        pytest.param("import airflow_provider_rayorch", id="package-root"),
        pytest.param(
            "import airflow_provider_rayorch, airflow_provider_rayorch.rayorch", id="engine"
        ),
    ],
)
def test_the_package_root_does_not_import_airflow(code: str) -> None:
    loaded = fresh_modules(code)
    assert "airflow" not in loaded
    assert "ray" not in loaded  # the driver and the Airflow layer import it lazily


def test_the_runtime_core_imports_no_ray_nor_airflow_at_run_time() -> None:
    modules = sorted(
        f"{PACKAGE}.{layer}.{path.stem}"
        for layer in PURE_LAYERS
        for path in (ENGINE / layer).glob("*.py")
        if path.stem != "__init__"
    )
    loaded = fresh_modules("\n".join(f"import {m}" for m in modules))
    assert not loaded & {"ray", "airflow"}


# -- static checks -----------------------------------------------------------------------
def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(path: Path, *, module_level: bool = False) -> list[tuple[int, str]]:
    rel = path.relative_to(ENGINE.parent.parent).with_suffix("")
    return source_imports(path.read_text(), ".".join(rel.parts[:-1]), module_level)


def source_imports(source: str, package: str, module_level: bool = False) -> list[tuple[int, str]]:
    """(line, absolute module) of every import executed at run time (not under
    ``if TYPE_CHECKING:``): anywhere in the source, functions included, or only
    those run when the module is imported (``module_level``)."""
    tree = ast.parse(source)
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for inner in node.body:
                skip.update(id(n) for n in ast.walk(inner))
    top = {id(n) for n in tree.body}
    for node in tree.body:  # statements under a module-level if/try still run at import
        if isinstance(node, (ast.If, ast.Try)):
            top.update(id(n) for n in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if id(node) in skip or (module_level and id(node) not in top):
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append((node.lineno, name))
            found += [(node.lineno, f"{name}.{alias.name}") for alias in node.names]
    return found


def engine_file(module: str) -> Path | None:
    if not module.startswith(PACKAGE):
        return None
    rel = Path(*module[len(PACKAGE) + 1 :].split(".")) if module != PACKAGE else Path()
    for candidate in (ENGINE / rel.with_suffix(".py"), ENGINE / rel / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def pure_closure() -> dict[Path, list[tuple[int, str]]]:
    """Files of program/ and runtime/ and every engine file they import when imported,
    each with all its run-time imports (lazy ones included).

    Lazy imports are checked but not followed: ``Pipeline.run`` may import the
    executor on call, as a convenience; importing the program layer may not."""
    todo = [p for layer in PURE_LAYERS for p in (ENGINE / layer).glob("*.py")]
    seen: dict[Path, list[tuple[int, str]]] = {}
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen[path] = runtime_imports(path)
        for _, module in runtime_imports(path, module_level=True):
            target = engine_file(module)
            if target is not None and target not in seen and target.name != "__init__.py":
                todo.append(target)
    return seen


def test_pure_layers_import_nothing_banned() -> None:
    closure = pure_closure()
    assert ENGINE / "runtime" / "core.py" in closure
    bad = [
        f"{path.relative_to(ENGINE)}:{line}: {module}"
        for path, imports in closure.items()
        for line, module in imports
        if module.split(".")[0] in BANNED
    ]
    assert not bad, "banned imports in the pure layers:\n" + "\n".join(bad)


def test_pure_layers_import_no_executor_module() -> None:
    closure = pure_closure()
    bad = sorted(
        str(path.relative_to(ENGINE))
        for path in closure
        if path.parent.name == "execution" or path.stem in ("driver", "store")
    )
    assert not bad, f"the pure layers reach executor/driver modules: {bad}"


def test_pure_layers_never_sleep() -> None:
    bad = []
    for path in pure_closure():
        for node in ast.walk(ast.parse(path.read_text())):
            name = (
                node.attr
                if isinstance(node, ast.Attribute)
                else node.id
                if isinstance(node, ast.Name)
                else node.name
                if isinstance(node, ast.alias)
                else None
            )
            if name == "sleep":
                bad.append(f"{path.relative_to(ENGINE)}:{getattr(node, 'lineno', '?')}")
    assert not bad, f"sleep in the pure layers: {bad}"


def test_the_static_checks_can_fail() -> None:
    """The checker sees lazy and relative imports, and skips TYPE_CHECKING ones."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import airflow\n"
        "from ..execution import local\n"
        "def f():\n    import ray\n    from time import sleep\n    sleep(1)\n"
    )
    modules = [m for _, m in source_imports(source, f"{PACKAGE}.runtime")]
    eager = [m for _, m in source_imports(source, f"{PACKAGE}.runtime", module_level=True)]
    assert "ray" not in eager
    assert f"{PACKAGE}.execution.local" in eager
    assert "ray" in modules
    assert "time.sleep" in modules
    assert f"{PACKAGE}.execution.local" in modules
    assert "airflow" not in modules


def _package_imports(folder: Path, package: str) -> list[tuple[str, int, str]]:
    """(file, line, module) of every run-time import of this package's modules in ``folder``."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(ENGINE.parent.parent).with_suffix("")
        for line, module in source_imports(path.read_text(), ".".join(rel.parts[:-1])):
            if module.startswith("airflow_provider_rayorch"):
                found.append((str(path.relative_to(folder)), line, module))
    return found


#: the package root's version, the one name the engine takes from above (the root is light)
ROOT_VERSION = ("airflow_provider_rayorch", "airflow_provider_rayorch.__version__")


def test_the_engine_imports_nothing_outside_itself() -> None:
    """The run layer, the Airflow layer and the reports sit above the engine: the
    engine (lazy imports included) reaches none of them."""
    bad = [
        f"{name}:{line}: {module}"
        for name, line, module in _package_imports(ENGINE, PACKAGE)
        if module not in ROOT_VERSION and module != PACKAGE and not module.startswith(f"{PACKAGE}.")
    ]
    assert not bad, "the engine imports from outside itself:\n" + "\n".join(bad)


def test_the_run_layer_imports_only_the_engine_and_itself() -> None:
    """``runs/`` never imports airflow, the Airflow layer or the report renderer."""
    runs = ENGINE.parent / "runs"
    allowed = (PACKAGE, "airflow_provider_rayorch.runs")
    bad = [
        f"{name}:{line}: {module}"
        for name, line, module in _package_imports(runs, "airflow_provider_rayorch.runs")
        if not module.startswith(allowed)
    ]
    third_party = [
        f"{path.name}:{line}: {module}"
        for path in sorted(runs.rglob("*.py"))
        for line, module in source_imports(path.read_text(), "airflow_provider_rayorch.runs")
        if module.split(".")[0] == "airflow"
    ]
    assert not bad + third_party, "the run layer imports upward:\n" + "\n".join(bad + third_party)


def test_the_layer_checks_can_fail() -> None:
    """A lazy upward import inside a function is seen."""
    source = "def f():\n    from airflow_provider_rayorch.reports import writer\n"
    modules = [m for _, m in source_imports(source, f"{PACKAGE}.runtime")]
    assert "airflow_provider_rayorch.reports.writer" in modules


def test_a_pool_actor_imports_the_worker_side_only() -> None:
    """What every actor imports at start (``ray_worker``, by the pickled class) leaves
    the compiler, the core, the driver and the store unloaded: they load on first use
    of the package root's names."""
    script = (
        "import airflow_provider_rayorch.rayorch.execution.ray_worker\n"
        "import json, sys\nprint(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = {m for m in json.loads(out.stdout.splitlines()[-1]) if m.startswith(PACKAGE)}
    driver_side = {
        f"{PACKAGE}.{name}"
        for name in (
            "execution.api",
            "execution.ray_backend",
            "runtime.core",
            "runtime.lowering",
            "program.module",
            "program.pipeline",
            "program.compiler",
        )
    }
    assert loaded & driver_side == set()
    assert not any(m.startswith("airflow_provider_rayorch.runs") for m in loaded)


def test_the_package_roots_names_load_on_first_use() -> None:
    names = ro.__all__
    assert sorted(names) == sorted(set(names))
    for name in names:
        assert getattr(ro, name) is not None, name
    assert set(names) <= set(dir(ro))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        ro.Nope  # noqa: B018
