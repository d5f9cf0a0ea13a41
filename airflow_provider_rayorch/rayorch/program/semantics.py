"""What a plan computes, apart from how it is scheduled: the semantic record.

A repair re-runs a committed microbatch's failed sources with the pipeline code
of today. That is safe only when today's plan computes the same thing as the
stored one: same structure, UDF import paths, constructor arguments, Call kwargs,
recovery kinds and outputs. Schedule-only options may differ: replicas, batch
sizes, batching policy, ``batch_timeout_s``, retry counts, batches in flight and
Ray actor options (``num_cpus``, ``runtime_env``, ...), as well as the run's
``input_batch_size``/``max_active_input_batches`` (not part of a plan at all).

:func:`semantic_record` is a JSON document naming everything by the user's names;
:func:`semantic_fingerprint` is its digest; :func:`semantic_diff` says, in words,
what differs between two records (``module 'ocr': udf changed from ... to ...``).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from .tokens import stable_token

if TYPE_CHECKING:
    from .plan import Plan

__all__ = ["semantic_diff", "semantic_fingerprint", "semantic_record"]

#: Bumped when the record's shape changes (a stored record of another version is
#: compared by fingerprint only).
SEMANTIC_VERSION = 1


def semantic_record(plan: Plan) -> dict[str, Any]:
    """The plan's meaning as plain JSON values, by the user's names."""
    ports = {p.id: p.label for p in plan.ports}
    domains = {d.id: d.name for d in plan.domains}
    modules = {m.id: m.name for m in plan.modules}
    return {
        "version": SEMANTIC_VERSION,
        "pipeline": plan.pipeline,
        "domains": [
            {"name": d.name, "parent": None if d.parent is None else domains[d.parent]}
            for d in plan.domains
        ],
        "modules": {
            m.name: {
                "udf": m.udf_path,
                "init_args": stable_token(list(m.init_args)),
                "init_kwargs": stable_token(dict(m.init_kwargs)),
                "num_outputs": m.num_outputs,
                "recovery": m.options.recovery.kind.value,
            }
            for m in plan.modules
        },
        "nodes": [
            {
                "kind": n.kind.value,
                "name": n.name,
                "domain": domains[n.domain],
                "inputs": [ports[p] for p in n.inputs],
                "outputs": [ports[p] for p in n.outputs],
                "module": None if n.module is None else modules[n.module],
                "kwargs": stable_token(dict(n.kwargs)),
                "members": None if n.members is None else ports[n.members],
                "child_domain": None if n.child_domain is None else domains[n.child_domain],
            }
            for n in plan.nodes
        ],
        "outputs": [ports[p] for p in plan.outputs],
        "output_names": list(plan.output_names),
    }


def semantic_fingerprint(plan: Plan) -> str:
    """A digest of :func:`semantic_record`: equal for plans that compute the same thing."""
    text = json.dumps(semantic_record(plan), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _field_changes(where: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [
        f"{where}: {key} changed from {_show(old.get(key))} to {_show(new.get(key))}"
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    ]


def semantic_diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two semantic records, one sentence each (empty: the same)."""
    changes: list[str] = []
    if old.get("version") != new.get("version"):
        return [f"the plan record's version {old.get('version')} is not {new.get('version')}"]
    if old.get("pipeline") != new.get("pipeline"):
        changes.append(
            f"pipeline changed from {_show(old.get('pipeline'))} to {_show(new.get('pipeline'))}"
        )
    old_mods, new_mods = dict(old.get("modules") or {}), dict(new.get("modules") or {})
    for name in sorted(set(old_mods) - set(new_mods)):
        changes.append(f"module {name!r} was removed")
    for name in sorted(set(new_mods) - set(old_mods)):
        changes.append(f"module {name!r} was added")
    for name in sorted(set(old_mods) & set(new_mods)):
        changes.extend(_field_changes(f"module {name!r}", old_mods[name], new_mods[name]))
    old_nodes, new_nodes = list(old.get("nodes") or []), list(new.get("nodes") or [])
    if len(old_nodes) != len(new_nodes):
        changes.append(
            f"the structure changed: {len(old_nodes)} nodes before, {len(new_nodes)} now "
            f"(before: {', '.join(n['name'] for n in old_nodes)}; "
            f"now: {', '.join(n['name'] for n in new_nodes)})"
        )
    else:
        for a, b in zip(old_nodes, new_nodes, strict=True):
            label = f"{b.get('kind')} {b.get('name')!r}"
            changes.extend(_field_changes(label, a, b))
    for key in ("domains", "outputs", "output_names"):
        if old.get(key) != new.get(key):
            changes.append(f"{key} changed from {_show(old.get(key))} to {_show(new.get(key))}")
    return changes
