"""The lowered value needs: one rule per node kind, and the same answer as the Ray
side's own analysis (``execution.facts.needs_by_call``) while that one exists."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.runtime.lowering import lower
from airflow_provider_rayorch.rayorch.runtime.value_needs import PortNeeds

from ..program.pipelines import Doc
from ..support import Identity, Pair
from .test_lowering import EveryKind


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


PIPELINES = [
    pytest.param(EveryKind, id="every-kind"),
    pytest.param(lambda: Doc(filtered=True), id="doc-filtered"),
    pytest.param(Nested, id="nested"),
    pytest.param(ExpandGathered, id="expand-gathered"),
]


def as_tuples(needs: dict[int, tuple[Any, ...]]) -> dict[int, list[tuple[int, frozenset[int]]]]:
    return {call: [(n.lengths, n.truths) for n in ports] for call, ports in needs.items()}


@pytest.mark.parametrize("make", PIPELINES)
def test_the_lowered_needs_equal_the_ray_sides_analysis(make: Any) -> None:
    facts = pytest.importorskip("airflow_provider_rayorch.rayorch.execution.facts")
    plan = make().compile()
    assert as_tuples(lower(plan).needs_by_call()) == as_tuples(facts.needs_by_call(plan))


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
