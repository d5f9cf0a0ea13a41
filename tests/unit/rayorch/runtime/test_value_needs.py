"""The lowered value needs (one rule per node kind): what a backend whose values stay
remote has its workers report."""

from __future__ import annotations

import pickle
from typing import Any

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.runtime.lowering import lower
from airflow_provider_rayorch.rayorch.runtime.value_needs import PortNeeds

from ..support import Identity, Pair


class Nested(ro.Pipeline):
    """doc -> pages -> tables (an expand of an expand), a mask on tables, gathered twice."""

    def __init__(self) -> None:
        self.split = ro.RayModule(Identity)
        self.keep = ro.RayModule(Identity)

    def forward(self, doc: ro.Port) -> ro.Port:
        pages = ro.F.expand(self.split(doc), domain="page")
        tables = ro.F.expand(pages, domain="table")
        kept = ro.F.filter(tables, self.keep(tables))
        return ro.F.reduce(ro.F.reduce(kept))


class ExpandGathered(ro.Pipeline):
    """A Call's list expanded, gathered back, expanded again; a mask on the whole value."""

    def __init__(self) -> None:
        self.make = ro.RayModule(Identity)
        self.mask = ro.RayModule(Identity)
        self.pair = ro.RayModule(Pair)

    def forward(self, doc: ro.Port) -> ro.Port:
        made = self.make(doc)
        kept = ro.F.filter(made, self.mask(doc))
        again = ro.F.expand(ro.F.reduce(ro.F.expand(kept, domain="part")), domain="part2")
        return ro.F.reduce(self.pair(again, ro.F.broadcast(doc, like=again)))


def test_nested_expands_need_lengths_two_levels_down_and_truths_at_their_level() -> None:
    plan = Nested().compile()
    needs = {c.node.name: c.needs for c in lower(plan).calls}
    assert needs["split"] == (PortNeeds(lengths=2),)
    assert needs["keep"] == (PortNeeds(truths=frozenset({0})),)


def test_an_expand_of_a_gathered_list_needs_no_deeper_length() -> None:
    plan = ExpandGathered().compile()
    needs = {c.node.name: c.needs for c in lower(plan).calls}
    assert needs["make"] == (PortNeeds(lengths=1),)
    assert needs["mask"] == (PortNeeds(truths=frozenset({0})),)
    assert needs["pair"] == (PortNeeds(),)


def test_port_needs_travel_as_themselves() -> None:
    needs = PortNeeds(2, frozenset({0, 1}))
    assert pickle.loads(pickle.dumps(needs)) == needs
    assert (needs.depth, needs.flat, PortNeeds(1).flat) == (2, False, True)


class Nest:
    def run(self, docs: list[Any]) -> tuple[list[Any], list[Any]]:
        return docs, docs


class Leaf:
    def run(self, items: list[Any]) -> list[Any]:
        return items


class AlignedNested(ro.Pipeline):
    def __init__(self) -> None:
        self.nest = ro.RayModule(Nest).returns(2)
        self.leaf = ro.RayModule(Leaf)

    def forward(self, doc: Any) -> Any:
        lists, flags = self.nest(doc)
        line, keep = ro.F.expand_aligned(lists, flags, domain="line")
        words = ro.F.expand(ro.F.filter(line, keep), domain="word")
        regrouped = ro.F.expand(ro.F.reduce(self.leaf(words)), domain="again")
        return ro.F.reduce(ro.F.reduce(self.leaf(regrouped)))


def test_needs_follow_aligned_expands_filters_and_reduces_of_the_plan() -> None:
    plan = AlignedNested().compile()
    by_name = {n.name: lower(plan).needs_by_call()[n.id] for n in plan.calls}
    lists, flags = by_name["nest"]
    assert lists == PortNeeds(lengths=2)  # expanded, then each line expanded again
    assert flags == PortNeeds(lengths=1, truths=frozenset({1}))  # a mask one level down
    # leaf's output is reduced then expanded again: the members, no length of theirs
    assert by_name["leaf"][0] == PortNeeds()
