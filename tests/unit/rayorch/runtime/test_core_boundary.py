"""Backends drive the core through its public surface only and never change its state.

Checked on the source of every engine module outside ``runtime/``: an attribute of a
variable named ``core`` is one of ``PUBLIC``, and nothing is assigned through it; nor
through any name annotated with a class of ``runtime/`` (a ``Microbatch`` a command
carried, an event, a ``Core`` by another name), nor mutated in place through it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import airflow_provider_rayorch.rayorch as ro

ENGINE = Path(ro.__file__).parent
#: Methods that change a list, dict or set in place.
MUTATORS = {
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "clear",
    "update",
    "setdefault",
    "add",
    "discard",
    "sort",
    "reverse",
    "popitem",
}
#: What a backend (and ``execution/api.py``) may use of a ``Core``.
PUBLIC = {
    "handle",
    "start",
    "validate",
    "in_flight",
    "ready_grains",
    "workers_of",
    "batches_on",
    "num_sources",
    "stale_reports",
    "duplicate_reports",
    "call_metrics",
    "grains_dispatched",
    "timeline",
    "values",
}


def core_uses(source: str) -> tuple[list[str], list[str]]:
    """(attributes read through ``core``, lines assigning through ``core``)."""
    tree = ast.parse(source)
    reads, writes = [], []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "core"
        ):
            reads.append(node.attr)
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            root = target
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if root is not target and isinstance(root, ast.Name) and root.id == "core":
                writes.append(f"line {node.lineno}")
    return reads, writes


def runtime_classes() -> set[str]:
    """Names of the classes the core's modules define (its state, events, commands)."""
    names = set()
    for path in (ENGINE / "runtime").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names |= {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    return names


def _mentions(annotation: ast.expr | None, classes: set[str]) -> bool:
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body
    return any(
        (isinstance(n, ast.Name) and n.id in classes)
        or (isinstance(n, ast.Attribute) and n.attr in classes)
        for n in ast.walk(annotation)
    )


def _root(node: ast.expr) -> tuple[ast.expr, int]:
    """The name an attribute/subscript chain starts from, and how many links it has."""
    links = 0
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node, links = node.value, links + 1
    return node, links


def core_state_writes(source: str, classes: set[str]) -> list[str]:
    """Lines that assign into, or mutate in place, an object of the core's types:
    through a parameter or variable annotated with one of ``classes``."""
    tree = ast.parse(source)
    writes = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        args = func.args
        typed = {
            a.arg
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
            if _mentions(a.annotation, classes)
        }
        typed |= {
            n.target.id
            for n in ast.walk(func)
            if isinstance(n, ast.AnnAssign)
            and isinstance(n.target, ast.Name)
            and _mentions(n.annotation, classes)
        }
        for node in ast.walk(func):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = [t for target in node.targets for t in getattr(target, "elts", [target])]
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.Delete):
                targets = node.targets
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in MUTATORS
                and isinstance(node.func.value, (ast.Attribute, ast.Subscript))
            ):
                targets = [node.func.value]
            for target in targets:
                root, links = _root(target)
                if links and isinstance(root, ast.Name) and root.id in typed:
                    writes.append(f"line {getattr(node, 'lineno', 0)}: {ast.unparse(target)}")
    return writes


def test_backends_use_only_the_public_surface_of_the_core() -> None:
    bad = []
    for path in sorted(ENGINE.rglob("*.py")):
        if path.parent.name == "runtime":
            continue
        reads, writes = core_uses(path.read_text(encoding="utf-8"))
        rel = path.relative_to(ENGINE)
        bad += [f"{rel}: core.{attr}" for attr in reads if attr not in PUBLIC]
        bad += [f"{rel}: assigns through core at {where}" for where in writes]
    assert not bad, "backends reach into the core:\n" + "\n".join(bad)


def test_backends_change_no_object_of_the_cores_types() -> None:
    classes = runtime_classes()
    assert {"Core", "Microbatch", "Dispatch", "MicrobatchDone"} <= classes
    bad = []
    for path in sorted(ENGINE.rglob("*.py")):
        if path.parent.name == "runtime":
            continue
        rel = path.relative_to(ENGINE)
        bad += [f"{rel}: {w}" for w in core_state_writes(path.read_text("utf-8"), classes)]
    assert not bad, "backends change the core's objects:\n" + "\n".join(bad)


def test_the_core_state_check_can_fail() -> None:
    source = (
        "def deliver(self, mb: Microbatch, n: int) -> None:\n"
        "    mb.outputs = fetch(mb.outputs)\n"
        "    mb.outputs[0] = []\n"
        "    mb.failures.append(n)\n"
        "    mb.outputs.count(n)\n"
        "    local = [mb]\n"
        "    local.append(n)\n"
        "    n = 3\n"
        "def other(self, core_: 'Core', event: MicrobatchDone) -> None:\n"
        "    core_.calls[0].ready += 1\n"
        "    event.microbatch.count = 0\n"
        "    x: Microbatch = event.microbatch\n"
        "    x.index, y = 1, 2\n"
        "    del x.roots\n"
    )
    writes = core_state_writes(source, {"Microbatch", "Core", "MicrobatchDone"})
    assert writes == [
        "line 2: mb.outputs",
        "line 3: mb.outputs[0]",
        "line 4: mb.failures",
        "line 10: core_.calls[0].ready",
        "line 11: event.microbatch.count",
        "line 13: x.index",
        "line 14: x.roots",
    ]


def test_the_boundary_check_can_fail() -> None:
    reads, writes = core_uses(
        "core.handle(e)\ncore._batches.clear()\ncore.calls[0].ready = 5\ncore.x += 1\n"
    )
    assert sorted(r for r in reads if r not in PUBLIC) == ["_batches", "calls", "x"]
    assert writes == ["line 3", "line 4"]
