"""Import bans: the package root stays light, the runtime core stays pure.

* ``import airflow_provider_rayorch`` and ``import airflow_provider_rayorch.rayorch``
  never import airflow (every Ray actor imports them), checked in a fresh process.
* The program and runtime layers (``program/*``, ``runtime/*`` and every engine
  module they import) import neither ray nor airflow nor anything that does I/O
  or concurrency, and never sleep; checked on their source (AST), so a lazy
  import inside a function is caught as well.
* The run layer (``runs/``) never imports airflow.

Which parts of the package may import which is ``tests/unit/layers.toml``, checked by
``tests/unit/test_layers.py``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import airflow_provider_rayorch.rayorch as ro
from tests.unit.package_imports import (
    Import,
    file_imports,
    imported_module,
    package_modules,
    source_imports,
)

ENGINE = Path(ro.__file__).parent
PACKAGE = "airflow_provider_rayorch.rayorch"
ENGINE_MODULES = package_modules(ENGINE)
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
def runtime_imports(path: Path, *, module_level: bool = False) -> list[tuple[int, str]]:
    """(line, absolute name) of every import in ``path`` executed at run time (not under
    ``if TYPE_CHECKING:``): anywhere in the source, functions included, or only those
    run when the module is imported (``module_level``)."""
    return _runtime(file_imports(path), module_level)


def _runtime(imports: list[Import], module_level: bool) -> list[tuple[int, str]]:
    return [
        (i.line, i.target)
        for i in imports
        if not i.type_only and (i.module_level or not module_level)
    ]


def engine_file(module: str) -> Path | None:
    """The engine file an imported name loads (``pkg.mod.Name`` -> ``pkg/mod.py``)."""
    name = imported_module(module, ENGINE_MODULES)
    if name is None or not name.startswith(PACKAGE):
        return None
    return ENGINE_MODULES[name]


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
    imports = source_imports(source, f"{PACKAGE}.runtime")
    modules = [m for _, m in _runtime(imports, module_level=False)]
    eager = [m for _, m in _runtime(imports, module_level=True)]
    assert "ray" not in eager
    assert f"{PACKAGE}.execution.local" in eager
    assert "ray" in modules
    assert "time.sleep" in modules
    assert f"{PACKAGE}.execution.local" in modules
    assert "airflow" not in modules


def test_the_run_layer_imports_no_airflow() -> None:
    """``runs/`` runs in the Ray job, where airflow is not installed (what else it may
    import is in ``tests/unit/layers.toml``)."""
    runs = ENGINE.parent / "runs"
    bad = [
        f"{path.name}:{line}: {module}"
        for path in sorted(runs.rglob("*.py"))
        for line, module in runtime_imports(path)
        if module.split(".")[0] == "airflow"
    ]
    assert not bad, "the run layer imports airflow:\n" + "\n".join(bad)


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
            "pipeline",
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
