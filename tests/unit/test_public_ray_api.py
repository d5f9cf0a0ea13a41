"""The package imports no private Ray module (``ray._private``, ``ray._common``,
``ray._raylet``, ...): those change without notice between Ray releases, so the
provider keeps to Ray's public API and writes the rest itself."""

from __future__ import annotations

import ast
from pathlib import Path

import airflow_provider_rayorch

PACKAGE = Path(airflow_provider_rayorch.__file__).parent


def _private(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "ray" and any(p.startswith("_") for p in parts[1:])


def private_ray_imports(source: str, filename: str) -> list[str]:
    """``line: module`` for every import of a private Ray module in ``source``: import
    statements at any depth, and ``importlib.import_module``/``__import__`` of a literal."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            arg = node.args[0]
            if name in ("import_module", "__import__") and isinstance(arg, ast.Constant):
                modules = [str(arg.value)]
        found += [f"{node.lineno}: {m}" for m in modules if _private(m)]
    return found


def test_the_scan_sees_each_way_of_importing() -> None:
    source = (
        "import ray._private.state\n"
        "def f():\n"
        "    from ray._common.utils import x\n"
        "    from ray import _raylet\n"
        "    importlib.import_module('ray._private.worker')\n"
        "import ray.job_submission\n"
        "from ray.runtime_env import RuntimeEnv\n"
    )
    assert private_ray_imports(source, "<test>") == [
        "1: ray._private.state",
        "3: ray._common.utils",
        "3: ray._common.utils.x",
        "4: ray._raylet",
        "5: ray._private.worker",
    ]


def test_the_package_imports_no_private_ray_module() -> None:
    found = {
        str(path.relative_to(PACKAGE)): hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if (hits := private_ray_imports(path.read_text(encoding="utf-8"), str(path)))
    }
    assert not found, f"private Ray imports (use Ray's public API): {found}"
