"""The simulator drives the real core on a virtual clock; the ablation queue keeps semantics."""

from __future__ import annotations

from dataclasses import replace

import pytest

from benchmarks.ablations import ShuffledReadyQueue, shuffled_queues
from benchmarks.simulator import SimConfig, simulate
from benchmarks.workload import CostModel, Workload, ideal_seconds, make_docs

SMALL = Workload(docs=40, mean_pages=6, accelerators=4, render_replicas=2)


def test_makespan_is_never_below_the_ideal_bound() -> None:
    result = simulate(SMALL)
    docs = make_docs(SMALL)
    assert result.pages == sum(d.pages for d in docs)
    assert result.docs == len(docs)
    assert result.makespan_s >= ideal_seconds(SMALL, docs)["bound_s"] - 1e-9
    assert 0 < result.busy_fraction <= 1
    assert 1 <= result.batch_fill <= SMALL.model_batch


def test_simulation_is_deterministic() -> None:
    assert simulate(SMALL).makespan_s == simulate(SMALL).makespan_s


def test_a_costlier_driver_never_finishes_sooner() -> None:
    cheap = simulate(SMALL, SimConfig(driver_s_per_grain=0.0, driver_s_per_batch=0.0))
    costly = simulate(SMALL, SimConfig(driver_s_per_grain=0.01, driver_s_per_batch=0.0))
    assert costly.makespan_s > cheap.makespan_s
    assert costly.driver_busy_fraction > cheap.driver_busy_fraction


@pytest.mark.parametrize("accelerators", [1, 2, 8])
def test_one_model_stage_alone_reaches_its_bound_with_a_free_driver(accelerators: int) -> None:
    only_model = replace(CostModel.zero(), model_fixed=0.01, model_per_page=0.001)
    w = replace(SMALL, cost=only_model, accelerators=accelerators)
    result = simulate(w, SimConfig(driver_s_per_grain=0.0, driver_s_per_batch=0.0, rpc_s=0.0))
    bound = ideal_seconds(w)["bound_s"]
    assert result.makespan_s >= bound - 1e-9  # float sums
    assert result.makespan_s <= bound * 1.5 + 0.05


def test_shuffled_queue_changes_order_not_outcomes() -> None:
    import airflow_provider_rayorch.rayorch as ro
    from benchmarks.systems.rayorch import make_pipeline

    w = replace(SMALL, cost=CostModel.zero(), poison_share=0.3, poison_ordinal=1)
    rows = [{"doc": d.doc, "pages": d.pages, "poisoned": d.poisoned} for d in make_docs(w)]

    def run(ready_queue: object = None) -> list[object]:
        pipeline = make_pipeline(ro, w, ours=True)
        with ro.Executor(pipeline, backend="local", progress=False, ready_queue=ready_queue) as ex:
            result = ex.run(rows)
        return [
            {k: v for k, v in o.items() if k in ("doc", "pages", "digest")}
            if isinstance(o, dict)
            else o.outcome
            for o in result.outputs
        ]

    fifo = run()
    shuffled = run(shuffled_queues(seed=3))
    assert shuffled == fifo


def test_shuffled_queue_takes_every_grain_once() -> None:
    from airflow_provider_rayorch.rayorch.runtime.phases import GrainPhase

    class G:
        def __init__(self, i: int) -> None:
            self.i = i
            self.gen = 0
            self.phase = GrainPhase.READY
            self.seq = i

    queue = ShuffledReadyQueue(seed=1)
    grains = [G(i) for i in range(50)]
    for g in grains:
        queue.push(g)  # type: ignore[arg-type]
    taken: list[int] = []
    while True:
        batch = queue.take(8)
        if not batch:
            break
        assert len(batch) <= 8
        taken += [g.i for g in batch]  # type: ignore[attr-defined]
    assert sorted(taken) == list(range(50))
    assert taken != list(range(50))
