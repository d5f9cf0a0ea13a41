"""Lowering: one builder per node kind, run once per plan and shared by every run."""

from __future__ import annotations

from typing import Any

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.rayorch.program.plan import NodeKind
from airflow_provider_rayorch.rayorch.runtime.core import Core
from airflow_provider_rayorch.rayorch.runtime.lowering import (
    BUILDERS,
    LoweredBroadcast,
    LoweredCall,
    LoweredExpand,
    LoweredFilter,
    LoweredReduce,
    lower,
)

from ..support import Identity, Pair


class EveryKind(ro.Pipeline):
    """doc -> pages -> (page, doc) pairs -> kept when the page is truthy -> reduce."""

    def __init__(self) -> None:
        self.pair = ro.RayModule(Pair).ray_options(
            batch_size=4, batching="single_parent", recovery=ro.RecoveryPolicy.retry_tail()
        )
        self.keep = ro.RayModule(Identity).ray_options(batch_size=2)

    def forward(self, doc: ro.Port) -> ro.Port:
        page = ro.F.expand(doc, domain="page")
        pairs = self.pair(page, ro.F.broadcast(doc, like=page))
        return ro.F.reduce(ro.F.filter(pairs, self.keep(page)))


def by_kind(plan: Any) -> dict[type, list[Any]]:
    out: dict[type, list[Any]] = {}
    for node in lower(plan).nodes:
        out.setdefault(type(node), []).append(node)
    return out


def test_there_is_one_builder_per_structural_node_kind() -> None:
    assert set(BUILDERS) == set(NodeKind) - {NodeKind.SOURCE}


def test_each_node_kind_lowers_to_its_slot_facts() -> None:
    plan = EveryKind().compile()
    slot = {p.label: p.slot for p in plan.ports}
    kinds = by_kind(plan)
    assert [len(kinds[k]) for k in (LoweredExpand, LoweredBroadcast, LoweredCall)] == [1, 1, 2]
    (expand,) = kinds[LoweredExpand]
    assert expand.child_domain == plan.domains[1].id
    assert expand.in_slots == (slot[plan.ports[plan.sources[0]].label],)
    pair, keep = kinds[LoweredCall]
    assert (pair.batch_size, pair.single_parent, pair.distinct) == (4, True, 2)
    assert pair.recovery == ro.RecoveryPolicy.retry_tail()
    assert (keep.batch_size, keep.single_parent, keep.distinct) == (2, False, 1)
    (bcast,) = kinds[LoweredBroadcast]
    assert (bcast.src_domain, bcast.domain) == (0, 1)
    assert bcast.chain == (expand.node_id,)
    assert bcast.out_slot in pair.in_slots
    (filt,) = kinds[LoweredFilter]
    assert (filt.value_slot, filt.mask_slot) == (pair.out_slots[0], keep.out_slots[0])
    (reduce,) = kinds[LoweredReduce]
    assert reduce.expand == expand.node_id
    assert reduce.in_slots == (filt.out_slot,)
    assert reduce.watch_slots == (filt.out_slot,)


def test_a_node_kind_without_a_builder_raises_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plan = EveryKind().compile()
    monkeypatch.delitem(BUILDERS, NodeKind.FILTER)
    with pytest.raises(UsageError) as raised:
        lower(plan)
    for part in ("'filter' node", "BUILDERS", "Pipeline.compile()"):
        assert part in str(raised.value)


def test_a_plan_is_lowered_once_and_every_run_shares_it() -> None:
    plan = EveryKind().compile()
    lowered = lower(plan)
    assert lower(plan) is lowered
    cores = [Core(plan, [[["a"]]]) for _ in range(2)]
    for core in cores:
        assert [c.in_slots for c in core.calls] == [c.in_slots for c in lowered.calls]
        assert all(
            c.in_slots is lc.in_slots for c, lc in zip(core.calls, lowered.calls, strict=True)
        )
    # A plan compiled again is another plan: lowered again.
    assert lower(EveryKind().compile()) is not lowered


def test_the_lowered_pipeline_runs() -> None:
    result = ro.run(EveryKind(), [["a", "", "b"]], backend="local", progress=False)
    assert result.outputs == [[("a", ["a", "", "b"]), ("b", ["a", "", "b"])]]
