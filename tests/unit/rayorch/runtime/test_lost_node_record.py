"""A worker lost with its batches names the node it ran on in the run's timeline, so
the report can say which node a loss came from (a dead node loses every actor on it)."""

from __future__ import annotations

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.execution.result import timeline_records
from airflow_provider_rayorch.rayorch.runtime.core import Core
from airflow_provider_rayorch.rayorch.runtime.events import WorkerAdded, WorkerLost

from ..support import Identity

NODE = "5f3c0a9e1b2d4c6e8f7a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a at 10.0.0.7"


class Flat(ro.Pipeline):
    def __init__(self) -> None:
        self.rows = ro.RayModule(Identity).ray_options(batch_size=2)

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.rows(doc)


def _lost_records(event: WorkerLost) -> list[dict]:
    plan = Flat().compile()
    core = Core(plan, [list("abcd")], clock=lambda: 0.0)
    core.handle(WorkerAdded("w1", plan.modules[0].id, 2))
    core.start()
    core.handle(event)
    records = timeline_records(core.timeline, 0.0)
    return [r for r in records if r["event"] == "report" and r["outcome"] == "lost"]


def test_a_lost_batch_names_the_node_its_worker_ran_on() -> None:
    lost = _lost_records(WorkerLost("w1", "node died", node=NODE))
    assert lost
    assert {r["node"] for r in lost} == {NODE}


def test_a_loss_with_no_known_node_names_none() -> None:
    lost = _lost_records(WorkerLost("w1", "killed"))
    assert lost
    assert all("node" not in r for r in lost)
