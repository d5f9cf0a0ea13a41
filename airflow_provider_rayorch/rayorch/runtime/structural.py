"""Structural nodes evaluated inside the core: filter, expand, reduce and broadcast.

Each is built from its lowered record into a handler that fires when the Items
it reads have outcomes, and settles the Items it writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..outcomes import ItemOutcome
from .items import carry, first_issue, settle, settle_all
from .lineage import PENDING, Cause, Entity, Issue

if TYPE_CHECKING:
    from .lineage import ValueOps
    from .lowering import LoweredBroadcast, LoweredExpand, LoweredFilter, LoweredReduce
    from .state import DomainState, Handler

__all__ = ["Broadcaster", "Reducer", "expand_handler", "filter_handler", "when_inputs_settled"]

_DROPPED, _FAILED, _SUPPRESSED = ItemOutcome.DROPPED, ItemOutcome.FAILED, ItemOutcome.SUPPRESSED


def when_inputs_settled(node_id: int, distinct: int, fire: Handler) -> Handler:
    """Fire once per Entity, when the last of ``distinct`` input slots has an outcome."""
    if distinct == 1:
        return fire

    def on_input(e: Entity) -> None:
        waits = e.waits
        if waits is None:
            waits = e.waits = {}
        left = waits.get(node_id, distinct) - 1
        if left:
            waits[node_id] = left
            return
        del waits[node_id]
        fire(e)

    return on_input


def filter_handler(node: LoweredFilter, values: ValueOps) -> Handler:
    slots = (node.value_slot, node.mask_slot)
    value_slot, mask_slot, out = node.value_slot, node.mask_slot, node.out_slot
    truth = values.truth

    def fire(e: Entity) -> None:
        items = e.items
        issue = first_issue(items, slots)
        if issue is not None:
            settle(e, out, issue.propagated())
        elif truth(items[mask_slot]):
            settle(e, out, items[value_slot])
        else:
            settle(e, out, Issue(_DROPPED, Cause(e, "dropped by filter")))

    return fire


def expand_handler(node: LoweredExpand, child: DomainState, values: ValueOps) -> Handler:
    in_slots, out_slots, nid = node.in_slots, node.out_slots, node.node_id
    split, kind = values.split, values.kind

    def fire(e: Entity) -> None:
        items = e.items
        issue = first_issue(items, in_slots)
        parts: list[list[Any]] = []
        if issue is None:
            for slot in in_slots:
                elements = split(items[slot])
                if elements is None:
                    message = (
                        f"F.expand into {child.name!r} needs a sequence, got {kind(items[slot])}"
                    )
                    issue = Issue(_FAILED, Cause(e, message))
                    break
                parts.append(elements)
            if issue is None and len({len(p) for p in parts}) > 1:
                lengths = ", ".join(str(len(p)) for p in parts)
                message = (
                    f"F.expand_aligned into {child.name!r}: sequences of different "
                    f"lengths ({lengths})"
                )
                issue = Issue(_FAILED, Cause(e, message))
        children = e.children
        if children is None:
            children = e.children = {}
        if issue is not None:
            children[nid] = issue
            settled = issue.propagated()
            for reduce in child.reduces:
                settle_all(e, reduce.out_slots, settled)
            return
        _spawn(e, child, nid, parts, out_slots, children)

    return fire


def _spawn(
    e: Entity,
    child: DomainState,
    nid: int,
    parts: list[list[Any]],
    out_slots: tuple[int, ...],
    children: dict[int, list[Entity] | Issue],
) -> None:
    """Create ``e``'s children in ``child`` and settle the expand's outputs in them."""
    n = len(parts[0])
    mb = e.mb
    kids = [Entity(child, e, i, mb, e.source) for i in range(n)]
    children[nid] = kids
    mb.outstanding += n * child.n_slots
    mb.entity_counts[child.name] = mb.entity_counts.get(child.name, 0) + n
    if child.reduces:
        waits = e.waits
        if waits is None:
            waits = e.waits = {}
        for reduce in child.reduces:
            if n:
                waits[reduce.id] = n * len(reduce.watch_slots)
            else:
                reduce.gather(e)
    broadcasts = child.broadcasts_in
    if len(out_slots) == 1 and not broadcasts:
        slot = out_slots[0]
        for kid, value in zip(kids, parts[0], strict=True):
            settle(kid, slot, value)
        return
    for i, kid in enumerate(kids):
        for slot, part in zip(out_slots, parts, strict=True):
            settle(kid, slot, part[i])
        for bcast in broadcasts:
            bcast.on_new_entity(kid)


class Reducer:
    """Gathers a parent's children by ordinal once every child Item it reads is settled."""

    __slots__ = (
        "expand",
        "gather_values",
        "id",
        "in_slots",
        "member_slot",
        "out_slots",
        "watch_slots",
    )

    def __init__(self, node: LoweredReduce, values: ValueOps) -> None:
        self.id = node.node_id
        self.expand = node.expand
        self.in_slots = node.in_slots
        self.member_slot = node.member_slot
        self.out_slots = node.out_slots
        self.watch_slots = node.watch_slots
        self.gather_values = values.gather

    def on_child(self, child: Entity) -> None:
        parent: Entity = child.parent  # type: ignore[assignment]
        waits: dict[int, int] = parent.waits  # type: ignore[assignment]
        left = waits[self.id] - 1
        if left:
            waits[self.id] = left
        else:
            del waits[self.id]
            self.gather(parent)

    def gather(self, parent: Entity) -> None:
        kids: list[Entity] = parent.children[self.expand]  # type: ignore[index,assignment]
        lists: list[list[Any]] = [[] for _ in self.in_slots]
        bad: Issue | None = None
        bad_own = False
        member_slot = self.member_slot
        for kid in kids:
            items = kid.items
            # A member's own issue first (its inputs are then not read), else its inputs'.
            issue = items[member_slot] if member_slot is not None else None
            if type(issue) is not Issue:
                issue = first_issue(items, self.in_slots)
            if issue is not None:
                if issue.outcome is not _DROPPED and not bad_own:
                    own = issue.cause.origin is kid
                    if bad is None or own:
                        bad, bad_own = issue, own
                continue
            if bad is None:
                for values, slot in zip(lists, self.in_slots, strict=True):
                    values.append(items[slot])
        if bad is not None:
            settle_all(parent, self.out_slots, Issue(_SUPPRESSED, bad.cause))
            return
        gather = self.gather_values
        for slot, values in zip(self.out_slots, lists, strict=True):
            settle(parent, slot, gather(values))


class Broadcaster:
    """Repeats an ancestor's Item for each descendant Entity of the target Domain."""

    __slots__ = ("chain", "out_slot", "src_slot")

    def __init__(self, node: LoweredBroadcast) -> None:
        self.src_slot = node.src_slot
        self.out_slot = node.out_slot
        self.chain = node.chain

    def on_new_entity(self, e: Entity) -> None:
        ancestor = e
        for _ in self.chain:
            ancestor = ancestor.parent  # type: ignore[assignment]
        content = ancestor.items[self.src_slot]
        if content is not PENDING:
            settle(e, self.out_slot, carry(content))

    def on_ancestor(self, ancestor: Entity) -> None:
        content = carry(ancestor.items[self.src_slot])
        level = [ancestor]
        for nid in self.chain:
            nxt: list[Entity] = []
            for e in level:
                kids = e.children.get(nid) if e.children else None
                if type(kids) is list:
                    nxt.extend(kids)
            level = nxt
        for e in level:
            if e.items[self.out_slot] is PENDING:
                settle(e, self.out_slot, content)
