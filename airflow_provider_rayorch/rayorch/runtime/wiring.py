"""Wiring: one run's state built from the lowered plan, with every node's handler
attached to the Item slots it reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .lowering import LoweredBroadcast, LoweredCall, LoweredExpand, LoweredFilter, LoweredReduce
from .state import CallState, DomainState, PoolState
from .structural import Broadcaster, Reducer, expand_handler, filter_handler, when_inputs_settled

if TYPE_CHECKING:
    from ..program.plan import Plan
    from .lineage import Entity, ValueOps
    from .lowering import LoweredPlan
    from .scheduling import ReadyQueueFactory
    from .state import Handler
    from .transitions import Transitions

__all__ = ["RunState", "wire"]


@dataclass(slots=True)
class RunState:
    domains: list[DomainState]
    pools: list[PoolState]
    calls: list[CallState]


def wire(
    plan: Plan,
    lowered: LoweredPlan,
    values: ValueOps,
    ready_queue: ReadyQueueFactory,
    transitions: Transitions,
) -> RunState:
    domains = [
        DomainState(d.id, d.name, lowered.slot_labels[d.id], d.depth, d.expand)
        for d in plan.domains
    ]
    pools = [
        PoolState(m.id, m.options.replicas, m.options.max_batches_in_flight) for m in plan.modules
    ]
    calls: list[CallState] = []
    for node in lowered.nodes:
        if isinstance(node, LoweredCall):
            call = _call(node, pools, ready_queue)
            calls.append(call)
            _listen(domains, node.node.id, node, _fire_call(call, transitions))
        elif isinstance(node, LoweredFilter):
            _listen(domains, node.node_id, node, filter_handler(node, values))
        elif isinstance(node, LoweredExpand):
            child = domains[node.child_domain]
            _listen(domains, node.node_id, node, expand_handler(node, child, values))
        elif isinstance(node, LoweredReduce):
            reducer = Reducer(node, values)
            child = domains[node.child_domain]
            child.reduces.append(reducer)
            for slot in reducer.watch_slots:
                child.consumers[slot].append(reducer.on_child)
        elif isinstance(node, LoweredBroadcast):
            bcast = Broadcaster(node)
            domains[node.domain].broadcasts_in.append(bcast)
            domains[node.src_domain].consumers[node.src_slot].append(bcast.on_ancestor)
    return RunState(domains, pools, calls)


def _call(node: LoweredCall, pools: list[PoolState], ready_queue: ReadyQueueFactory) -> CallState:
    pool = pools[node.module]
    call = CallState(node, pool, ready_queue(node.single_parent))
    pool.calls.append(call)
    return call


def _fire_call(call: CallState, transitions: Transitions) -> Handler:
    new_grain = transitions.new_grain

    def fire(e: Entity) -> None:
        new_grain(call, e)

    return fire


def _listen(
    domains: list[DomainState],
    node_id: int,
    node: LoweredCall | LoweredFilter | LoweredExpand,
    fire: Handler,
) -> None:
    """Attach ``fire`` to every distinct input slot of ``node``."""
    if isinstance(node, LoweredFilter):
        slots = {node.value_slot, node.mask_slot}
    else:
        slots = set(node.in_slots)
    handler = when_inputs_settled(node_id, node.distinct, fire)
    consumers = domains[node.domain].consumers
    for slot in sorted(slots):
        consumers[slot].append(handler)
