"""Backends drive the core through its public surface only and never change its state.

Checked on the source of every engine module outside ``runtime/``: an attribute of a
variable named ``core`` is one of ``PUBLIC``, and nothing is assigned through it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import airflow_provider_rayorch.rayorch as ro

ENGINE = Path(ro.__file__).parent
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


def test_the_boundary_check_can_fail() -> None:
    reads, writes = core_uses(
        "core.handle(e)\ncore._batches.clear()\ncore.calls[0].ready = 5\ncore.x += 1\n"
    )
    assert sorted(r for r in reads if r not in PUBLIC) == ["_batches", "calls", "x"]
    assert writes == ["line 3", "line 4"]
