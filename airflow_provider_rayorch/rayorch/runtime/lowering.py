"""Lowering: a compiled ``Plan`` as the slot-level facts the core and the backends read.

One builder per node kind turns a plan node into a frozen record of Item slots
(positions in an Entity's ``items``) and options. ``lower(plan)`` runs the
builders once per plan object and caches the result, so every run of a warm
executor reads the same records, and a backend can read them too.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..program.options import Batching
from ..program.plan import Node, NodeKind, Plan
from .value_needs import PortNeeds, port_needs

if TYPE_CHECKING:
    from ..program.options import RecoveryPolicy

__all__ = [
    "LoweredBroadcast",
    "LoweredCall",
    "LoweredExpand",
    "LoweredFilter",
    "LoweredPlan",
    "LoweredReduce",
    "lower",
]


@dataclass(frozen=True, slots=True)
class LoweredCall:
    """A Call: fires once per Entity of ``domain`` whose ``in_slots`` are settled."""

    node: Node
    domain: int
    module: int
    in_slots: tuple[int, ...]
    out_slots: tuple[int, ...]
    #: Distinct input slots: the node fires when the last of them is settled.
    distinct: int
    kwargs: dict[str, Any]
    batch_size: int
    recovery: RecoveryPolicy
    single_parent: bool
    #: Per output Port: what the core will need to know about its values.
    needs: tuple[PortNeeds, ...]


@dataclass(frozen=True, slots=True)
class LoweredFilter:
    node_id: int
    domain: int
    value_slot: int
    mask_slot: int
    out_slot: int
    distinct: int


@dataclass(frozen=True, slots=True)
class LoweredExpand:
    node_id: int
    domain: int
    child_domain: int
    in_slots: tuple[int, ...]
    out_slots: tuple[int, ...]
    distinct: int


@dataclass(frozen=True, slots=True)
class LoweredReduce:
    """Gathers the children of ``child_domain`` back into their parent."""

    node_id: int
    child_domain: int
    #: The expand node whose children are gathered.
    expand: int
    in_slots: tuple[int, ...]
    member_slot: int | None
    #: Child slots whose settling counts down to the gather.
    watch_slots: tuple[int, ...]
    out_slots: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LoweredBroadcast:
    """Repeats an Item of an ancestor Domain into each Entity of ``domain``."""

    domain: int
    src_domain: int
    src_slot: int
    out_slot: int
    #: Expand node ids from the source Domain down to ``domain``.
    chain: tuple[int, ...]


Lowered = LoweredCall | LoweredFilter | LoweredExpand | LoweredReduce | LoweredBroadcast


@dataclass(frozen=True, slots=True)
class LoweredPlan:
    #: Every non-source node, in plan order.
    nodes: tuple[Lowered, ...]
    calls: tuple[LoweredCall, ...]
    #: Per Domain: the label of each Item slot (for error messages).
    slot_labels: tuple[tuple[str, ...], ...]
    source_slots: tuple[int, ...]
    output_slots: tuple[int, ...]

    def needs_by_call(self) -> dict[int, tuple[PortNeeds, ...]]:
        """Call node id -> the facts each output Port's values must come back with
        (what a backend whose values stay remote has its workers report)."""
        return {call.node.id: call.needs for call in self.calls}


# -- one builder per node kind --------------------------------------------------------
def _slots(plan: Plan, ports: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(plan.ports[p].slot for p in ports)


def _lower_call(plan: Plan, node: Node) -> LoweredCall:
    module = plan.modules[node.module]  # type: ignore[index]
    options = module.options
    return LoweredCall(
        node=node,
        domain=node.domain,
        module=module.id,
        in_slots=_slots(plan, node.inputs),
        out_slots=_slots(plan, node.outputs),
        distinct=len(set(node.inputs)),
        kwargs=dict(node.kwargs),
        batch_size=options.batch_size,
        recovery=options.recovery,
        single_parent=options.batching is Batching.SINGLE_PARENT,
        needs=tuple(port_needs(plan, p) for p in node.outputs),
    )


def _lower_filter(plan: Plan, node: Node) -> LoweredFilter:
    value_slot, mask_slot = _slots(plan, node.inputs)
    return LoweredFilter(
        node_id=node.id,
        domain=node.domain,
        value_slot=value_slot,
        mask_slot=mask_slot,
        out_slot=plan.ports[node.outputs[0]].slot,
        distinct=len(set(node.inputs)),
    )


def _lower_expand(plan: Plan, node: Node) -> LoweredExpand:
    return LoweredExpand(
        node_id=node.id,
        domain=node.domain,
        child_domain=node.child_domain,  # type: ignore[arg-type]
        in_slots=_slots(plan, node.inputs),
        out_slots=_slots(plan, node.outputs),
        distinct=len(set(node.inputs)),
    )


def _lower_reduce(plan: Plan, node: Node) -> LoweredReduce:
    in_slots = _slots(plan, node.inputs)
    member_slot = None if node.members is None else plan.ports[node.members].slot
    watched = set(in_slots)
    if member_slot is not None:
        watched.add(member_slot)
    return LoweredReduce(
        node_id=node.id,
        child_domain=node.child_domain,  # type: ignore[arg-type]
        expand=plan.domains[node.child_domain].expand,  # type: ignore[arg-type,index]
        in_slots=in_slots,
        member_slot=member_slot,
        watch_slots=tuple(sorted(watched)),
        out_slots=_slots(plan, node.outputs),
    )


def _lower_broadcast(plan: Plan, node: Node) -> LoweredBroadcast:
    src = plan.ports[node.inputs[0]]
    chain: list[int] = []
    cursor = plan.domains[node.domain]
    while cursor.id != src.domain:
        chain.append(cursor.expand)  # type: ignore[arg-type]
        cursor = plan.domains[cursor.parent]  # type: ignore[index]
    return LoweredBroadcast(
        domain=node.domain,
        src_domain=src.domain,
        src_slot=src.slot,
        out_slot=plan.ports[node.outputs[0]].slot,
        chain=tuple(reversed(chain)),
    )


_Builder = Callable[[Plan, Node], Lowered]
BUILDERS: dict[NodeKind, _Builder] = {
    NodeKind.CALL: _lower_call,
    NodeKind.FILTER: _lower_filter,
    NodeKind.EXPAND: _lower_expand,
    NodeKind.REDUCE: _lower_reduce,
    NodeKind.BROADCAST: _lower_broadcast,
}


def _build(plan: Plan, node: Node) -> Lowered:
    builder = BUILDERS.get(node.kind)
    if builder is None:
        raise UsageError(
            f"plan node {node.id} ({node.name!r}) is a {node.kind.value!r} node, which the "
            "engine cannot lower: run a plan made by Pipeline.compile(), or register a "
            f"builder for {node.kind} in runtime.lowering.BUILDERS"
        )
    return builder(plan, node)


def _lower(plan: Plan) -> LoweredPlan:
    """Every node but the sources (read through ``source_slots``) through its builder."""
    nodes = tuple(_build(plan, node) for node in plan.nodes if node.kind is not NodeKind.SOURCE)
    return LoweredPlan(
        nodes=nodes,
        calls=tuple(n for n in nodes if type(n) is LoweredCall),
        slot_labels=tuple(tuple(plan.ports[p].label for p in d.ports) for d in plan.domains),
        source_slots=_slots(plan, plan.sources),
        output_slots=_slots(plan, plan.outputs),
    )


_CACHE: dict[int, tuple[weakref.ref[Plan], LoweredPlan]] = {}


def lower(plan: Plan) -> LoweredPlan:
    """The lowered form of ``plan``, built once per plan object and then shared."""
    key = id(plan)
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is plan:
        return hit[1]
    lowered = _lower(plan)
    _CACHE[key] = (weakref.ref(plan, lambda _: _CACHE.pop(key, None)), lowered)
    return lowered
