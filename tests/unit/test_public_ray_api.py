"""The package uses Ray's public API only: private names change without notice between
Ray releases, so the provider keeps to the public API and writes the rest itself.

The scan walks each module's syntax tree and flags, with its line:

1. an import of a private Ray module: a path under ``ray`` with a segment that starts
   with ``_`` (``ray._private``, ``ray._common``, ``from ray import _raylet``), as an
   import statement at any depth or ``importlib.import_module``/``__import__`` of a
   literal;
2. an attribute chain rooted at a name the module binds to Ray (``import ray``,
   ``import ray.util.state as rs``, ``from ray.exceptions import RayActorError``) with
   a segment that starts with ``_`` and is no dunder (``ray._private.state.actors``,
   ``RayActorError._x``; ``ray.__version__`` is public);
3. an attribute, on any receiver but ``self`` or ``cls``, whose name is private to
   Ray's public object types: a non-dunder ``_`` name that ``dir()`` lists for actor
   handles and classes, actor methods, object refs, ids, the runtime context, remote
   functions and actor errors in the installed Ray, or any ``_ray_`` name
   (``handle._actor_id``, ``handle._ray_actor_id``);
4. ``getattr``/``hasattr``/``setattr``/``delattr`` with a literal name that rule 2 or 3
   flags (``getattr(handle, "_actor_id")``, ``getattr(ray, "_private")``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import ray
import ray.actor
import ray.exceptions
import ray.remote_function
import ray.runtime_context

import airflow_provider_rayorch

PACKAGE = Path(airflow_provider_rayorch.__file__).parent

_RAY_TYPES = (
    ray.actor.ActorHandle,
    ray.actor.ActorClass,
    ray.actor.ActorMethod,
    ray.ObjectRef,
    ray.ObjectRefGenerator,
    ray.ActorID,
    ray.TaskID,
    ray.NodeID,
    ray.JobID,
    ray.runtime_context.RuntimeContext,
    ray.remote_function.RemoteFunction,
    ray.exceptions.RayActorError,
    ray.exceptions.ActorDiedError,
    ray.exceptions.RayTaskError,
)


def _private_name(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


#: Rule 3: names private to Ray's public object types (of actor errors, their
#: instances' too).
RAY_PRIVATE_ATTRIBUTES = frozenset(
    name
    for kind in (*_RAY_TYPES, ray.exceptions.RayActorError(), ray.exceptions.ActorDiedError())
    for name in dir(kind)
    if _private_name(name)
)


def _private(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "ray" and any(p.startswith("_") for p in parts[1:])


def _ray_bound_names(tree: ast.AST) -> set[str]:
    """Names the module binds to Ray modules or to objects imported from them."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "ray":
                    names.add(alias.asname or alias.name.split(".")[0])
        elif (
            isinstance(node, ast.ImportFrom)
            and not node.level
            and (node.module or "").split(".")[0] == "ray"
        ):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def _chain(node: ast.expr) -> tuple[str, list[str]] | None:
    """``(root name, attributes)`` of ``a.b.c``; None when not rooted at a name."""
    attributes: list[str] = []
    while isinstance(node, ast.Attribute):
        attributes.insert(0, node.attr)
        node = node.value
    return (node.id, attributes) if isinstance(node, ast.Name) else None


def _flag_attribute(receiver: ast.expr, name: str, ray_names: set[str]) -> str | None:
    """What to report for ``receiver.name`` (rules 2 and 3), or None."""
    chain = _chain(receiver)
    if chain is not None and chain[0] in ray_names:
        path = [*chain[1], name]
        return ".".join([chain[0], *path]) if any(map(_private_name, path)) else None
    if not _private_name(name) or chain in (("self", []), ("cls", [])):
        return None
    if name in RAY_PRIVATE_ATTRIBUTES or name.startswith("_ray_"):
        return f"{ast.unparse(receiver)}.{name}"
    return None


def private_ray_uses(source: str, filename: str) -> list[str]:
    """``line: what`` for every use of private Ray API in ``source`` (the module
    docstring's rules)."""
    tree = ast.parse(source, filename)
    ray_names = _ray_bound_names(tree)
    found: list[str] = []
    attributes: list[str] = []
    for node in ast.walk(tree):
        uses: list[str] = []
        if isinstance(node, ast.Import):
            uses = [a.name for a in node.names if _private(a.name)]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            uses = [m for m in modules if _private(m)]
        elif isinstance(node, ast.Attribute):
            flagged = _flag_attribute(node.value, node.attr, ray_names)
            attributes += [f"{node.lineno}: {flagged}"] if flagged else []
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            arg = node.args[0]
            if name in ("import_module", "__import__") and isinstance(arg, ast.Constant):
                uses = [str(arg.value)] if _private(str(arg.value)) else []
            elif (
                name in ("getattr", "hasattr", "setattr", "delattr")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                flagged = _flag_attribute(node.args[0], node.args[1].value, ray_names)
                uses = [f"{name}({flagged})"] if flagged else []
        found += [f"{node.lineno}: {use}" for use in uses]
    # An attribute chain once, whole: ``ray._private.state.actors``, not its prefixes.
    found += [a for a in attributes if not any(b.startswith(a + ".") for b in attributes)]
    return sorted(found, key=lambda hit: int(hit.split(":")[0]))


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
    assert private_ray_uses(source, "<test>") == [
        "1: ray._private.state",
        "3: ray._common.utils",
        "3: ray._common.utils.x",
        "4: ray._raylet",
        "5: ray._private.worker",
    ]


def test_the_scan_sees_each_way_of_reaching_a_private_attribute() -> None:
    source = (
        "import ray\n"
        "import ray.util.state as rs\n"
        "from ray.exceptions import RayActorError\n"
        "def f(handle, error, worker):\n"
        "    ray._private.state.actors(actor_id=handle._actor_id.hex())\n"
        "    rs._internal()\n"
        "    RayActorError._hidden\n"
        "    getattr(handle, '_actor_id')\n"
        "    getattr(ray, '_private')\n"
        "    worker.process._ray_actor_id\n"
        "    error._actor_init_failed\n"
    )
    assert private_ray_uses(source, "<test>") == [
        "5: ray._private.state.actors",
        "5: handle._actor_id",
        "6: rs._internal",
        "7: RayActorError._hidden",
        "8: getattr(handle._actor_id)",
        "9: getattr(ray._private)",
        "10: worker.process._ray_actor_id",
        "11: error._actor_init_failed",
    ]


def test_the_scan_leaves_public_names_and_the_packages_own_private_names_alone() -> None:
    source = (
        "import ray\n"
        "from ray.util.state import get_actor\n"
        "class Pools:\n"
        "    def _remote(self):\n"
        "        return self._remote, self._drop(1), ray.__version__\n"
        "def g(pools, error):\n"
        "    pools._spawn(1)\n"
        "    ray.get_runtime_context().get_actor_id()\n"
        "    get_actor(error.actor_id)\n"
    )
    assert private_ray_uses(source, "<test>") == []


#: Private Ray API the package still uses, as ``file: what``. Ray has no public
#: key-value API: the job's driver takes the run store options entry the hook stored
#: through the Jobs API's package route with ``ray.experimental.internal_kv``. The
#: test fails when a use is added, and when one of these goes (then drop it here).
STILL_USED = {
    "runs/handoff.py: internal_kv._internal_kv_get",
    "runs/handoff.py: internal_kv._internal_kv_del",
}


def test_the_package_uses_no_private_ray_api() -> None:
    found = {
        f"{path.relative_to(PACKAGE)}: {hit.split(': ', 1)[1]}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for hit in private_ray_uses(path.read_text(encoding="utf-8"), str(path))
    }
    assert found == STILL_USED, (
        f"private Ray API added (use Ray's public API): {sorted(found - STILL_USED)}; "
        f"gone (drop from STILL_USED): {sorted(STILL_USED - found)}"
    )
