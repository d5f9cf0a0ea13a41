"""Workers that share one process (``WorkerAdded(host=...)``), driven by hand.

A process's death is the death of each of its workers. The Grains that were in
flight on any of them then run alone in a whole process: the process drains
(takes nothing new), runs that one batch, and only then takes other work. So a
Grain that kills the process again is charged alone, never a batch beside it.
"""

from __future__ import annotations

from typing import Any

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.runtime.core import Core
from airflow_provider_rayorch.rayorch.runtime.events import BatchRaised, WorkerAdded, WorkerLost

from ..support import Identity
from .test_core import Flat, d, finish, outputs

FL = ro.ItemOutcome.FAILED


def _two_workers_lost_together(*, shared: bool) -> tuple[Core, list[Any]]:
    """a and b run on w1 and w2; both die at once; w3 and w4 come up (in one new
    process when ``shared``)."""
    plan = Flat(
        batch_size=1, recovery=ro.RecoveryPolicy.retry_batch(max_retries=0, infra_retries=1)
    ).compile()
    core = Core(plan, [["a", "b", "c", "d"]], clock=lambda: 0.0)
    first, second = ("p1", "p2") if shared else (None, None)
    out = core.handle(WorkerAdded("w1", 0, 1, host=first))
    out += core.handle(WorkerAdded("w2", 0, 1, host=first))
    out += core.start()
    assert d(out) == [(1, "w1", "rows", [["a"]]), (2, "w2", "rows", [["b"]])]
    assert core.handle(WorkerLost("w1", "process died")) == []
    assert core.handle(WorkerLost("w2", "process died")) == []
    out = core.handle(WorkerAdded("w3", 0, 1, host=second))
    return core, out + core.handle(WorkerAdded("w4", 0, 1, host=second))


def test_workers_of_their_own_processes_run_lost_grains_side_by_side() -> None:
    _core, out = _two_workers_lost_together(shared=False)
    # Re-queued at the front, the newest loss first: b, then a.
    assert d(out) == [(3, "w3", "rows", [["b"]]), (4, "w4", "rows", [["a"]])]


def test_a_lost_grain_runs_alone_in_a_whole_shared_process() -> None:
    core, out = _two_workers_lost_together(shared=True)
    # b runs alone: w4 shares its process and takes nothing while it runs.
    assert d(out) == [(3, "w3", "rows", [["b"]])]
    assert d(finish(core, 3, ["B"])) == [(4, "w3", "rows", [["a"]])]
    # Nothing was lost twice: the process takes normal work again, on both workers.
    assert d(finish(core, 4, ["A"])) == [(5, "w3", "rows", [["c"]]), (6, "w4", "rows", [["d"]])]
    finish(core, 5, ["C"])
    assert outputs(finish(core, 6, ["D"])) == ["A", "B", "C", "D"]


def test_a_lost_grain_that_kills_the_shared_process_again_is_charged_alone() -> None:
    core, out = _two_workers_lost_together(shared=True)
    assert d(out) == [(3, "w3", "rows", [["b"]])]
    # b kills the process again: w3's death is w4's too, and only b is charged.
    assert core.handle(WorkerLost("w3", "process died")) == []
    assert core.handle(WorkerLost("w4", "process died")) == []  # already gone with w3
    out = core.handle(WorkerAdded("w5", 0, 1, host="p3"))
    out += core.handle(WorkerAdded("w6", 0, 1, host="p3"))
    # b is past infra_retries=1 and fails; a still runs alone, then c and d together.
    assert d(out) == [(4, "w5", "rows", [["a"]])]
    assert d(finish(core, 4, ["A"])) == [(5, "w5", "rows", [["c"]]), (6, "w6", "rows", [["d"]])]
    finish(core, 5, ["C"])
    out = finish(core, 6, ["D"])
    assert outputs(out) == [
        "A",
        ro.OutputIssue(FL, "doc[1]: process died (infra_retries=1 exhausted)"),
        "C",
        "D",
    ]


class FirstThenRows(ro.Pipeline):
    """first (batch 1) -> rows (batch 1), the two modules in one process."""

    def __init__(self) -> None:
        policy = ro.RecoveryPolicy.retry_batch(max_retries=0, infra_retries=1)
        self.first = ro.RayModule(Identity).ray_options(batch_size=1, recovery=policy)
        self.rows = ro.RayModule(Identity).ray_options(batch_size=1, recovery=policy)

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.rows(self.first(doc))


def test_a_shared_process_drains_before_a_lost_grain_of_another_pool_runs() -> None:
    core = Core(FirstThenRows().compile(), [["a", "b", "c"]], clock=lambda: 0.0)
    out = core.handle(WorkerAdded("f1", 0, 1, host="p1"))
    out += core.handle(WorkerAdded("r1", 1, 1, host="p1"))
    out += core.start()
    assert d(out) == [(1, "f1", "first", [["a"]])]
    assert d(finish(core, 1, ["a1"])) == [(2, "f1", "first", [["b"]]), (3, "r1", "rows", [["a1"]])]
    # The process dies with b (first) and a1 (rows) in flight; a new one comes up.
    assert core.handle(WorkerLost("f1", "process died")) == []
    assert core.handle(WorkerLost("r1", "process died")) == []
    out = core.handle(WorkerAdded("f2", 0, 1, host="p2"))
    assert d(out) == [(4, "f2", "first", [["b"]])]  # b alone, r2 not up yet
    out = core.handle(WorkerAdded("r2", 1, 1, host="p2"))
    assert d(out) == []  # a1 waits: the process is not idle
    # b done: the process is idle, and a1 (lost) goes before c (first) and b1 (rows).
    assert d(finish(core, 4, ["b1"])) == [(5, "r2", "rows", [["a1"]])]
    out = finish(core, 5, ["A"])
    assert d(out) == [(6, "f2", "first", [["c"]]), (7, "r2", "rows", [["b1"]])]
    finish(core, 7, ["B"])
    out = finish(core, 6, ["c1"])
    assert d(out) == [(8, "r2", "rows", [["c1"]])]
    assert outputs(finish(core, 8, ["C"])) == ["A", "B", "C"]


def test_a_split_killed_on_purpose_runs_again_split() -> None:
    """isolate_tail split a hung batch; its halves went to two workers of one process,
    which the backend then killed (``charge=False``). Each half runs again as the batch
    it was: merged again with a new partner each time, the hanging row would never
    run alone, and the run would never end."""
    plan = Flat(batch_size=2, recovery=ro.RecoveryPolicy.isolate_tail(max_retries=0)).compile()
    core = Core(plan, [["a", "b"]], clock=lambda: 0.0)
    out = core.handle(WorkerAdded("w1", 0, 1, host="p1"))
    out += core.handle(WorkerAdded("w2", 0, 1, host="p1")) + core.start()
    assert d(out) == [(1, "w1", "rows", [["a", "b"]])]
    out = core.handle(BatchRaised(1, "batch_timeout_s=5 exceeded"))
    assert d(out) == [(2, "w1", "rows", [["a"]]), (3, "w2", "rows", [["b"]])]
    assert core.handle(WorkerLost("w1", "killed after batch_timeout_s=5", charge=False)) == []
    out = core.handle(WorkerAdded("w3", 0, 1, host="p2"))
    out += core.handle(WorkerAdded("w4", 0, 1, host="p2"))
    assert d(out) == [(4, "w3", "rows", [["b"]]), (5, "w4", "rows", [["a"]])]
    finish(core, 5, ["A"])
    out = core.handle(BatchRaised(4, "batch_timeout_s=5 exceeded"))
    assert outputs(out) == ["A", ro.OutputIssue(FL, "doc[1]: batch_timeout_s=5 exceeded")]
