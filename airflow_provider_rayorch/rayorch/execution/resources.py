"""Fail fast on resources a cluster can never give the actor pools."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ray

from ..errors import ResourceUnavailableError
from ..program.shared_processes import process_groups, process_names

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..program.plan import Plan

__all__ = ["check_resources", "needs"]


def needs(options: dict[str, Any]) -> dict[str, float]:
    """The resources one actor with these Ray options asks for."""
    need: dict[str, float] = {k: float(v) for k, v in (options.get("resources") or {}).items()}
    for option, key in (("num_cpus", "CPU"), ("num_gpus", "GPU"), ("memory", "memory")):
        if options.get(option):
            need[key] = float(options[option])
    return need


@dataclass(frozen=True)
class _Processes:
    """Actor processes of one kind: a module's replicas, or one shared process."""

    label: str  #: "split", or "share_process 'text' (split, recognize)"
    count: int
    need: dict[str, float]  #: what one of them asks Ray for


def _processes(plan: Plan, actor_options: Callable[[int], dict[str, Any]]) -> list[_Processes]:
    """Every kind of actor process the plan starts. A shared process holds every replica
    of its members and asks for their sum, so it counts once."""
    shared = process_names(plan.modules)
    found = [
        _Processes(m.name, m.options.replicas, needs(actor_options(m.id)))
        for m in plan.modules
        if shared[m.id] is None
    ]
    for name, members in process_groups(plan.modules).items():
        label = f"share_process {name!r} ({', '.join(m.name for m in members)})"
        found.append(_Processes(label, 1, needs(actor_options(members[0].id))))
    return found


def check_resources(
    plan: Plan, actor_options: Callable[[int], dict[str, Any]], *, wait_for_resources: bool
) -> None:
    """Raise when no node could host one actor process, or when all of them together
    ask for more than the whole cluster has (unless ``wait_for_resources``)."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    totals = [n.get("Resources", {}) for n in nodes]
    demand: dict[str, float] = {}
    processes = _processes(plan, actor_options)
    for kind in processes:
        for key, value in kind.need.items():
            demand[key] = demand.get(key, 0.0) + value * kind.count
        if kind.need and not any(
            all(res.get(k, 0.0) >= v for k, v in kind.need.items()) for res in totals
        ):
            what = kind.label if " " in kind.label else f"module {kind.label!r}"
            raise ResourceUnavailableError(
                f"{what} asks for {kind.need} per actor, but no node of the "
                f"cluster has that much (nodes: {_describe(totals)}); lower its "
                "ray_options or add a node that provides them"
            )
    if wait_for_resources:
        return
    cluster = ray.cluster_resources()
    short = {
        k: (v, cluster.get(k, 0.0)) for k, v in demand.items() if v > cluster.get(k, 0.0) + 1e-9
    }
    if short:
        listing = ", ".join(
            f"{k}: {want:g} wanted, {have:g} in the cluster"
            for k, (want, have) in sorted(short.items())
        )
        pools = "; ".join(f"{p.label} {p.count} x {p.need}" for p in processes if p.need)
        raise ResourceUnavailableError(
            f"the actor pools together need more than the cluster has ({listing}; "
            f"pools: {pools}). Lower replicas or per-actor resources, or pass "
            "wait_for_resources=True to wait for an autoscaling cluster"
        )


def _describe(totals: list[dict[str, float]]) -> str:
    nodes = [
        "{"
        + ", ".join(f"{k}: {v:g}" for k, v in sorted(r.items()) if not k.startswith("node:"))
        + "}"
        for r in totals
    ]
    return ", ".join(nodes) or "no alive node"
