"""The lineage core, driven by hand: events in, exact commands out.

No executor and no UDF runs here: a test plays the executor, feeding
``WorkerAdded``/``BatchFinished``/``BatchRaised``/``BatchRejected``/``WorkerLost``
and checking every ``Dispatch``/``MicrobatchDone``/``RunFinished``/``Abort``.
The autouse fixture of ``conftest.py`` checks the core's invariants at the end.
"""

from __future__ import annotations

from typing import Any

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.runtime.core import Core
from airflow_provider_rayorch.rayorch.runtime.events import (
    WITHDRAWN,
    Abort,
    BatchFinished,
    BatchRaised,
    BatchRejected,
    Dispatch,
    MicrobatchDone,
    Withdraw,
    WorkerAdded,
    WorkerLost,
)
from airflow_provider_rayorch.rayorch.runtime.lineage import PENDING

from ..support import Identity, check_core

S = ro.ItemOutcome.SUPPRESSED
FL = ro.ItemOutcome.FAILED


# -- pipelines -----------------------------------------------------------------------
class Pages(ro.Pipeline):
    """doc -> page children (the doc's value is the list of pages) -> rows -> reduce."""

    def __init__(self, **opts: Any) -> None:
        self.rows = ro.RayModule(Identity).ray_options(**opts)

    def forward(self, doc: ro.Port) -> ro.Port:
        return ro.F.reduce(self.rows(ro.F.expand(doc, domain="page")))


class PagesThenAssemble(ro.Pipeline):
    """doc -> pages -> rows -> reduce -> assemble (a root Call after the gather)."""

    def __init__(self) -> None:
        self.rows = ro.RayModule(Identity).ray_options(batch_size=1)
        self.assemble = ro.RayModule(Identity).ray_options(batch_size=8)

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.assemble(ro.F.reduce(self.rows(ro.F.expand(doc, domain="page"))))


class Flat(ro.Pipeline):
    def __init__(self, **opts: Any) -> None:
        self.rows = ro.RayModule(Identity).ray_options(**opts)

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.rows(doc)


# -- driving helpers -------------------------------------------------------------------
def make(
    pipeline: ro.Pipeline,
    *columns: list[Any],
    workers: list[tuple[Any, str, int]] = (("w1", "rows", 1),),  # type: ignore[assignment]
    **options: Any,
) -> tuple[Core, list[Any]]:
    plan = pipeline.compile()
    modules = {m.name: m.id for m in plan.modules}
    core = Core(plan, list(columns), clock=lambda: 0.0, **options)
    out: list[Any] = []
    for worker, module, capacity in workers:
        out += core.handle(WorkerAdded(worker, modules[module], capacity))
    out += core.start()
    return core, out


def d(cmds: list[Any]) -> list[tuple[int, Any, str, list[list[Any]]]]:
    """The Dispatch commands as (batch, worker, Call, columns)."""
    return [(c.batch, c.worker, c.node.name, c.columns) for c in cmds if type(c) is Dispatch]


def kinds(cmds: list[Any]) -> list[str]:
    return [type(c).__name__ for c in cmds]


def finish(core: Core, batch: int, rows: list[Any]) -> list[Any]:
    out = core.handle(BatchFinished(batch, rows))
    check_core(core)
    return out


def drain(core: Core, out: list[Any], poison: set[Any] = frozenset()) -> list[Any]:  # type: ignore[assignment]
    """Play an executor to the end: batches holding a poisoned row raise (naming
    the first), the others return their rows upper-cased. Returns the microbatches
    finished meanwhile."""
    pending = [c for c in out if type(c) is Dispatch]
    done = [c.microbatch for c in out if type(c) is MicrobatchDone]
    while pending:
        cmd = pending.pop(0)
        rows = cmd.columns[0]
        bad = [r for r in rows if r in poison]
        event: Any = (
            BatchRaised(cmd.batch, f"ValueError: {bad[0]}")
            if bad
            else BatchFinished(cmd.batch, [r.upper() for r in rows])
        )
        commands = core.handle(event)
        pending += [c for c in commands if type(c) is Dispatch]
        done += [c.microbatch for c in commands if type(c) is MicrobatchDone]
        check_core(core)
    assert core.finished
    return done


def outputs(cmds: list[Any]) -> list[Any]:
    done = [c.microbatch for c in cmds if type(c) is MicrobatchDone]
    assert len(done) == 1
    return done[0].outputs[0]


# =============================================================================
# Batch composition
# =============================================================================
def test_any_parent_batches_are_fifo_across_parents() -> None:
    core, out = make(Pages(batch_size=4), [["a", "b", "c"], ["d", "e"]])
    assert d(out) == [(1, "w1", "rows", [["a", "b", "c", "d"]])]
    out = finish(core, 1, ["A", "B", "C", "D"])
    assert d(out) == [(2, "w1", "rows", [["e"]])]
    out = finish(core, 2, ["E"])
    assert kinds(out) == ["MicrobatchDone", "RunFinished"]
    assert outputs(out) == [["A", "B", "C"], ["D", "E"]]


def test_single_parent_batches_take_siblings_of_the_oldest_ready_parent() -> None:
    core, out = make(Pages(batch_size=2, batching="single_parent"), [["a", "b", "c"], ["d", "e"]])
    assert d(out) == [(1, "w1", "rows", [["a", "b"]])]
    out = finish(core, 1, ["A", "B"])
    assert d(out) == [(2, "w1", "rows", [["c"]])]  # never mixed with doc 1's pages
    out = finish(core, 2, ["C"])
    assert d(out) == [(3, "w1", "rows", [["d", "e"]])]
    out = finish(core, 3, ["D", "E"])
    assert outputs(out) == [["A", "B", "C"], ["D", "E"]]


def test_a_busy_worker_only_gets_full_batches() -> None:
    core, out = make(Flat(batch_size=3), list("abcd"), workers=[("w1", "rows", 2)])
    # idle worker: a batch; then busy: the 1 Grain left is no full batch
    assert d(out) == [(1, "w1", "rows", [["a", "b", "c"]])]
    out = finish(core, 1, ["A", "B", "C"])
    assert d(out) == [(2, "w1", "rows", [["d"]])]
    out = finish(core, 2, ["D"])
    assert outputs(out) == ["A", "B", "C", "D"]


def test_a_busy_worker_takes_a_full_batch() -> None:
    core, out = make(Flat(batch_size=2), list("abcde"), workers=[("w1", "rows", 2)])
    assert d(out) == [(1, "w1", "rows", [["a", "b"]]), (2, "w1", "rows", [["c", "d"]])]
    out = finish(core, 2, ["C", "D"])
    assert d(out) == []  # still busy with batch 1: a partial batch waits
    out = finish(core, 1, ["A", "B"])
    assert d(out) == [(3, "w1", "rows", [["e"]])]
    out = finish(core, 3, ["E"])
    assert outputs(out) == list("ABCDE")


def test_idle_workers_are_preferred_over_busy_ones() -> None:
    core, out = make(
        Flat(batch_size=1), list("abc"), workers=[("w1", "rows", 3), ("w2", "rows", 3)]
    )
    assert [w for _, w, _, _ in d(out)] == ["w1", "w2", "w1"]
    for batch, value in ((1, "A"), (2, "B")):
        finish(core, batch, [value])
    out = finish(core, 3, ["C"])
    assert outputs(out) == ["A", "B", "C"]


def test_worker_capacity_defaults_to_max_batches_in_flight() -> None:
    core, out = make(Flat(batch_size=1, max_batches_in_flight=3), list("abcd"), workers=[])
    out = core.handle(WorkerAdded("w", 0))
    assert [b for b, *_ in d(out)] == [1, 2, 3]
    for batch in (1, 2, 3):
        out = finish(core, batch, [batch])
    out = finish(core, 4, [4])
    assert outputs(out) == [1, 2, 3, 4]


def test_no_worker_no_dispatch_until_one_is_added() -> None:
    core, out = make(Flat(batch_size=2), ["a"], workers=[])
    assert out == []
    assert core.ready_grains() == 1
    out = core.handle(WorkerAdded("late", 0, 1))
    assert d(out) == [(1, "late", "rows", [["a"]])]
    out = finish(core, 1, ["A"])
    assert kinds(out) == ["MicrobatchDone", "RunFinished"]


# =============================================================================
# Microbatch admission and completion
# =============================================================================
def test_admission_honours_input_batch_size_and_max_active() -> None:
    core, out = make(
        Flat(batch_size=10), list("abcde"), input_batch_size=2, max_active_input_batches=1
    )
    assert d(out) == [(1, "w1", "rows", [["a", "b"]])]
    out = finish(core, 1, ["A", "B"])
    assert kinds(out) == ["MicrobatchDone", "Dispatch"]
    mb = out[0].microbatch
    assert (mb.index, mb.first_source, mb.count, mb.outputs) == (0, 0, 2, [["A", "B"]])
    assert d(out) == [(2, "w1", "rows", [["c", "d"]])]
    out = finish(core, 2, ["C", "D"])
    assert d(out) == [(3, "w1", "rows", [["e"]])]
    out = finish(core, 3, ["E"])
    assert kinds(out) == ["MicrobatchDone", "RunFinished"]
    assert out[0].microbatch.index == 2
    assert (core.microbatches_done, core.sources_done) == (3, 5)


def test_two_active_microbatches_share_batches() -> None:
    core, out = make(
        Flat(batch_size=10), list("abcde"), input_batch_size=2, max_active_input_batches=2
    )
    assert d(out) == [(1, "w1", "rows", [["a", "b", "c", "d"]])]
    out = finish(core, 1, list("ABCD"))
    assert kinds(out) == ["MicrobatchDone", "MicrobatchDone", "Dispatch"]
    out = finish(core, 2, ["E"])
    assert kinds(out) == ["MicrobatchDone", "RunFinished"]


def test_skipped_microbatches_are_never_admitted() -> None:
    core, out = make(
        Flat(batch_size=10), list("abcde"), input_batch_size=2, skip_microbatches={0, 2}
    )
    assert d(out) == [(1, "w1", "rows", [["c", "d"]])]
    out = finish(core, 1, ["C", "D"])
    assert kinds(out) == ["MicrobatchDone", "RunFinished"]
    assert out[0].microbatch.first_source == 2


def test_a_microbatch_completes_independently_of_later_ones() -> None:
    # mb 0 = doc 0 (2 pages), mb 1 = doc 1 (1 page); doc 1's page finishes first
    core, out = make(
        Pages(batch_size=1),
        [["a", "b"], ["c"]],
        workers=[("w1", "rows", 5)],
        input_batch_size=1,
        max_active_input_batches=2,
    )
    assert d(out) == [
        (1, "w1", "rows", [["a"]]),
        (2, "w1", "rows", [["b"]]),
        (3, "w1", "rows", [["c"]]),
    ]
    out = finish(core, 3, ["C"])
    assert kinds(out) == ["MicrobatchDone"]
    assert out[0].microbatch.index == 1
    finish(core, 1, ["A"])
    out = finish(core, 2, ["B"])
    assert kinds(out) == ["MicrobatchDone", "RunFinished"]


def test_all_microbatches_skipped_finishes_at_once() -> None:
    core, out = make(Flat(), list("abcde"), input_batch_size=2, skip_microbatches={0, 1, 2})
    assert kinds(out) == ["RunFinished"]
    assert (core.microbatches_done, core.sources_done) == (0, 0)


def test_empty_input_finishes_at_once() -> None:
    core, out = make(Flat(), [])
    assert kinds(out) == ["RunFinished"]
    assert core.finished


def test_a_group_with_no_children_is_gathered_at_once() -> None:
    _core, out = make(Pages(), [[]])
    assert kinds(out) == ["MicrobatchDone", "RunFinished"]
    assert outputs(out) == [[]]


def test_a_parent_is_gathered_as_soon_as_its_own_children_are_terminal() -> None:
    core, out = make(
        PagesThenAssemble(),
        [["a"], ["b", "c"]],
        workers=[("w1", "rows", 3), ("a1", "assemble", 1)],
    )
    assert d(out) == [
        (1, "w1", "rows", [["a"]]),
        (2, "w1", "rows", [["b"]]),
        (3, "w1", "rows", [["c"]]),
    ]
    # doc 0's only page is done: doc 0 is gathered and assembled while doc 1's
    # pages are still in flight
    out = finish(core, 1, ["A"])
    assert d(out) == [(4, "a1", "assemble", [[["A"]]])]
    finish(core, 2, ["B"])
    out = finish(core, 3, ["C"])
    assert d(out) == []  # assemble's only worker is busy with doc 0
    out = finish(core, 4, ["doc0"])
    assert d(out) == [(5, "a1", "assemble", [[["B", "C"]]])]
    out = finish(core, 5, ["doc1"])
    assert outputs(out) == ["doc0", "doc1"]


# =============================================================================
# Commit protocol: generations, duplicates and stale reports
# =============================================================================
def test_duplicate_reports_are_counted_not_raised() -> None:
    core, out = make(Flat(batch_size=2), ["a", "b", "c"])
    finish(core, 1, ["A", "B"])
    assert core.handle(BatchFinished(1, ["X", "Y"])) == []
    assert core.handle(BatchRaised(1, "E: late")) == []
    assert core.handle(BatchRejected(1, "late")) == []
    assert core.duplicate_reports == 3
    assert core.handle(BatchFinished(99, [])) == []  # never dispatched
    assert core.duplicate_reports == 4
    out = finish(core, 2, ["C"])
    assert outputs(out) == ["A", "B", "C"]
    assert core.stale_reports == 0


def test_worker_loss_requeues_in_flight_grains_at_the_front() -> None:
    core, out = make(Flat(batch_size=2), list("abcde"), workers=[("w1", "rows", 1)])
    assert d(out) == [(1, "w1", "rows", [["a", "b"]])]
    assert core.handle(WorkerLost("w1", "node died")) == []
    out = core.handle(WorkerAdded("w2", 0, 1))
    # a, b ahead of c, d, e; a new batch id (a new generation)
    assert d(out) == [(2, "w2", "rows", [["a", "b"]])]
    # the lost batch reports late: stale, ignored
    assert core.handle(BatchFinished(1, ["X", "Y"])) == []
    assert core.stale_reports == 1
    out = finish(core, 2, ["A", "B"])
    out = finish(core, 3, ["C", "D"])
    out = finish(core, 4, ["E"])
    assert outputs(out) == list("ABCDE")
    assert core.calls[0].retries == 2


def test_worker_loss_requeues_several_batches_in_fifo_order() -> None:
    core, out = make(Flat(batch_size=2), list("abcdef"), workers=[("w1", "rows", 2)])
    assert d(out) == [(1, "w1", "rows", [["a", "b"]]), (2, "w1", "rows", [["c", "d"]])]
    core.handle(WorkerLost("w1"))
    out = core.handle(WorkerAdded("w2", 0, 1))
    assert d(out) == [(3, "w2", "rows", [["a", "b"]])]


def test_worker_loss_charges_only_the_lost_grains() -> None:
    core, out = make(
        Flat(batch_size=1, recovery=ro.RecoveryPolicy.retry_batch(infra_retries=1)),
        ["a", "b"],
        workers=[("w1", "rows", 1), ("w2", "rows", 1)],
    )
    assert d(out) == [(1, "w1", "rows", [["a"]]), (2, "w2", "rows", [["b"]])]
    core.handle(WorkerLost("w1"))
    out = core.handle(WorkerAdded("w3", 0, 1))
    assert d(out) == [(3, "w3", "rows", [["a"]])]
    core.handle(WorkerLost("w3", "oom"))  # a's second loss: over infra_retries=1
    out = finish(core, 2, ["B"])
    assert outputs(out) == [
        ro.OutputIssue(FL, "doc[0]: oom (infra_retries=1 exhausted)"),
        "B",
    ]


def test_a_reply_lost_with_its_actor_charges_an_innocent_row_at_most_once() -> None:
    # w1 holds a (finished, but its reply died with the actor) and b (the row that
    # killed it). The core charges the oldest, a; both then run alone, so b's next
    # deaths are charged to b and a ends PRESENT: a ran twice, b three times. This is
    # the fault matrix's "run() always exits" cell when a reply is lost (seen in CI).
    core, out = make(
        Flat(batch_size=1, recovery=ro.RecoveryPolicy.retry_batch(1, infra_retries=1)),
        ["a", "b"],
        workers=[("w1", "rows", 2)],
    )
    assert d(out) == [(1, "w1", "rows", [["a"]]), (2, "w1", "rows", [["b"]])]
    core.handle(WorkerLost("w1", "exit"))
    out = core.handle(WorkerAdded("w2", 0, 2))
    assert d(out) == [(3, "w2", "rows", [["a"]])]  # alone: nothing beside or behind it
    out = finish(core, 3, ["A"])
    assert d(out) == [(4, "w2", "rows", [["b"]])]
    core.handle(WorkerLost("w2", "exit"))  # b's first charge: within infra_retries=1
    out = core.handle(WorkerAdded("w3", 0, 2))
    assert d(out) == [(5, "w3", "rows", [["b"]])]
    out = core.handle(WorkerLost("w3", "exit"))  # b's second charge: over it
    assert outputs(out) == ["A", ro.OutputIssue(FL, "doc[1]: exit (infra_retries=1 exhausted)")]
    check_core(core)


def test_losing_an_unknown_worker_is_ignored() -> None:
    core, _ = make(Flat(), ["a"])
    assert core.handle(WorkerLost("nobody")) == []
    out = finish(core, 1, ["A"])
    assert outputs(out) == ["A"]


def test_adding_a_worker_twice_is_an_error() -> None:
    core, _ = make(Flat(), ["a"])
    with pytest.raises(ro.UsageError, match="already registered"):
        core.handle(WorkerAdded("w1", 0, 1))
    finish(core, 1, ["A"])


def test_unknown_event_is_a_usage_error() -> None:
    core, _ = make(Flat(), ["a"])
    with pytest.raises(ro.UsageError, match="not a core event"):
        core.handle("finished")  # type: ignore[arg-type]
    finish(core, 1, ["A"])


@pytest.mark.parametrize(
    ("event", "cause"),
    [
        pytest.param(
            BatchFinished(1, ["only one"]),
            "doc[{i}]: rows: the batch result has 1 rows for 2 inputs",
            id="wrong-length",
        ),
        pytest.param(
            BatchRejected(1, "rows.run() returned 1 results for a batch of 2 rows"),
            "doc[{i}]: rows: rows.run() returned 1 results for a batch of 2 rows",
            id="rejected",
        ),
    ],
)
def test_rejected_batches_fail_their_rows_without_retry(event: Any, cause: str) -> None:
    core, _ = make(Flat(batch_size=2), ["a", "b"])
    out = core.handle(event)
    assert d(out) == []
    assert outputs(out) == [ro.OutputIssue(FL, cause.format(i=i)) for i in range(2)]
    assert core.calls[0].retries == 0


def test_abort_policy_emits_abort_and_stops_dispatching() -> None:
    core, out = make(
        Flat(batch_size=1, recovery=ro.RecoveryPolicy.abort()),
        ["a", "b"],
        workers=[("w1", "rows", 1)],
    )
    out = core.handle(BatchRaised(1, "KeyError: 'x'"))
    assert kinds(out) == ["Abort"]
    assert isinstance(out[0], Abort)
    assert isinstance(out[0].error, ro.ExecutionError)
    assert "KeyError: 'x'" in str(out[0].error)
    assert core.aborted is out[0].error


# =============================================================================
# Recovery decisions as the core applies them
# =============================================================================
def test_retry_batch_pins_the_same_batch_ahead_then_splits_it_ahead() -> None:
    policy = ro.RecoveryPolicy.retry_batch(max_retries=1)
    core, out = make(Flat(batch_size=2, recovery=policy), list("abcde"))
    out = core.handle(BatchRaised(1, "E: a"))
    assert d(out) == [(2, "w1", "rows", [["a", "b"]])]
    out = core.handle(BatchRaised(2, "E: a"))  # retries spent: split, each half pinned ahead
    assert d(out) == [(3, "w1", "rows", [["a"]])]
    out = core.handle(BatchRaised(3, "E: a"))  # a raised alone: a FAILS
    assert d(out) == [(4, "w1", "rows", [["b"]])]
    out = finish(core, 4, ["B"])
    assert d(out) == [(5, "w1", "rows", [["c", "d"]])]
    finish(core, 5, ["C", "D"])
    out = finish(core, 6, ["E"])
    assert outputs(out) == [ro.OutputIssue(FL, "doc[0]: E: a"), "B", "C", "D", "E"]


def test_retry_tail_requeues_loose_behind_the_queue() -> None:
    policy = ro.RecoveryPolicy.retry_tail(max_retries=1)
    core, out = make(Flat(batch_size=2, recovery=policy), list("abcde"))
    out = core.handle(BatchRaised(1, "E: x"))
    assert d(out) == [(2, "w1", "rows", [["c", "d"]])]
    out = finish(core, 2, ["C", "D"])
    assert d(out) == [(3, "w1", "rows", [["e", "a"]])]
    out = finish(core, 3, ["E", "A"])
    assert d(out) == [(4, "w1", "rows", [["b"]])]
    out = finish(core, 4, ["B"])
    assert outputs(out) == list("ABCDE")


def test_isolate_tail_retries_then_halves_until_the_poisoned_row_is_alone() -> None:
    policy = ro.RecoveryPolicy.isolate_tail(max_retries=1)
    core, out = make(Flat(batch_size=4, recovery=policy), list("abcdef"))
    assert d(out) == [(1, "w1", "rows", [["a", "b", "c", "d"]])]
    out = core.handle(BatchRaised(1, "ValueError: c"))
    assert d(out) == [(2, "w1", "rows", [["e", "f"]])]  # retried behind the queue
    out = finish(core, 2, ["E", "F"])
    assert d(out) == [(3, "w1", "rows", [["a", "b", "c", "d"]])]  # pinned, alone
    out = core.handle(BatchRaised(3, "ValueError: c"))
    assert d(out) == [(4, "w1", "rows", [["a", "b"]])]  # split in halves
    out = finish(core, 4, ["A", "B"])
    assert d(out) == [(5, "w1", "rows", [["c", "d"]])]
    out = core.handle(BatchRaised(5, "ValueError: c"))
    assert d(out) == [(6, "w1", "rows", [["c"]])]
    out = core.handle(BatchRaised(6, "ValueError: c"))  # alone: FAILS
    assert d(out) == [(7, "w1", "rows", [["d"]])]
    out = finish(core, 7, ["D"])
    assert outputs(out) == ["A", "B", ro.OutputIssue(FL, "doc[2]: ValueError: c"), "D", "E", "F"]


def test_retries_are_counted_per_grain() -> None:
    policy = ro.RecoveryPolicy.retry_tail(max_retries=1)
    core, out = make(Flat(batch_size=2, recovery=policy), list("abc"))
    out = core.handle(BatchRaised(1, "E: 1"))  # a, b: 1 retry each, behind c
    assert d(out) == [(2, "w1", "rows", [["c", "a"]])]
    # batch 2 = [c, a] (c fresh, a retried once) raises again: a is spent but raised in
    # company, so it runs alone (pinned behind b); c is retried loose behind it
    out = core.handle(BatchRaised(2, "E: 2"))
    assert d(out) == [(3, "w1", "rows", [["b"]])]
    out = finish(core, 3, ["B"])
    assert d(out) == [(4, "w1", "rows", [["a"]])]
    out = core.handle(BatchRaised(4, "E: a"))  # spent and alone: a FAILS, no retry
    assert d(out) == [(5, "w1", "rows", [["c"]])]
    out = finish(core, 5, ["C"])
    assert outputs(out) == [ro.OutputIssue(FL, "doc[0]: E: a"), "B", "C"]


# =============================================================================
# GroupFailure
# =============================================================================
def test_group_failure_suppresses_queued_siblings_without_dispatch() -> None:
    core, out = make(Pages(batch_size=1), [["a", "b", "c"], ["d"]])
    assert d(out) == [(1, "w1", "rows", [["a"]])]
    out = finish(core, 1, [ro.GroupFailure("torn")])
    assert d(out) == [(2, "w1", "rows", [["d"]])]  # b and c are never dispatched
    assert core.calls[0].suppressed == 2
    out = finish(core, 2, ["D"])
    assert outputs(out) == [ro.OutputIssue(S, "doc[0]/page[0]: torn"), ["D"]]


def test_group_failure_suppresses_in_flight_siblings_at_commit() -> None:
    core, out = make(Pages(batch_size=1), [["a", "b", "c"]], workers=[("w1", "rows", 2)])
    assert d(out) == [(1, "w1", "rows", [["a"]]), (2, "w1", "rows", [["b"]])]
    out = finish(core, 2, [ro.GroupFailure("torn")])
    assert d(out) == []  # c was queued: suppressed
    assert [c for c in out if type(c) is Withdraw] == [Withdraw(1, "w1", (0,))]
    out = finish(core, 1, ["A"])  # a was in flight: may not commit
    assert outputs(out) == [ro.OutputIssue(S, "doc[0]/page[1]: torn")]
    assert core.calls[0].suppressed == 2
    assert core.calls[0].failed == 1


def test_group_failure_withdraws_only_the_doomed_rows_of_batches_in_flight() -> None:
    core, out = make(
        Pages(batch_size=2), [["a", "b", "c"], ["d", "e", "f"]], workers=[("w1", "rows", 3)]
    )
    assert d(out) == [
        (1, "w1", "rows", [["a", "b"]]),
        (2, "w1", "rows", [["c", "d"]]),
        (3, "w1", "rows", [["e", "f"]]),
    ]
    out = finish(core, 1, ["A", ro.GroupFailure("torn")])
    # c (a sibling) is withdrawn from batch 2; d, e, f belong to another document.
    assert [c for c in out if type(c) is Withdraw] == [Withdraw(2, "w1", (0,))]
    assert core.calls[0].withdrawn == 1
    finish(core, 3, ["E", "F"])
    out = finish(core, 2, [WITHDRAWN, "D"])  # the backend skipped c
    assert outputs(out) == [ro.OutputIssue(S, "doc[0]/page[1]: torn"), ["D", "E", "F"]]


@pytest.mark.no_core_invariants
def test_a_skipped_row_of_a_healthy_parent_is_an_engine_bug() -> None:
    core, _ = make(Pages(batch_size=2), [["a", "b"]])
    with pytest.raises(ro.InvalidTransition, match="skipped"):
        core.handle(BatchFinished(1, ["A", WITHDRAWN]))


def test_group_failure_within_one_batch() -> None:
    core, _ = make(Pages(batch_size=4), [["a", "b", "c"]])
    out = finish(core, 1, ["A", ro.GroupFailure("torn"), "C"])
    assert outputs(out) == [ro.OutputIssue(S, "doc[0]/page[1]: torn")]
    assert core.calls[0].suppressed == 2


def test_group_failure_leaves_committed_siblings_alone() -> None:
    core, _ = make(Pages(batch_size=1), [["a", "b"]])
    finish(core, 1, ["A"])
    kids = next(iter(core.active[0].roots[0].children.values()))
    out = finish(core, 2, [ro.GroupFailure("torn")])
    assert kids[0].items[core.calls[0].out_slots[0]] == "A"  # committed: untouched
    assert core.calls[0].suppressed == 0
    assert outputs(out) == [ro.OutputIssue(S, "doc[0]/page[1]: torn")]


def test_group_failure_on_a_root_entity_is_a_record_failure() -> None:
    core, _ = make(Flat(batch_size=3), ["a", "b", "c"])
    out = finish(core, 1, ["A", ro.GroupFailure("root"), "C"])
    assert outputs(out) == ["A", ro.OutputIssue(FL, "doc[1]: root"), "C"]
    assert core.calls[0].suppressed == 0


def test_group_failure_suppresses_a_sibling_requeued_by_its_policy() -> None:
    core, out = make(Pages(batch_size=1), [["a", "b"]], workers=[("w1", "rows", 2)])
    assert d(out) == [(1, "w1", "rows", [["a"]]), (2, "w1", "rows", [["b"]])]
    finish(core, 1, [ro.GroupFailure("torn")])
    out = core.handle(BatchRaised(2, "E: flaky"))  # b goes back to READY
    assert d(out) == []  # ... and is a queued sibling of a GroupFailure
    assert outputs(out) == [ro.OutputIssue(S, "doc[0]/page[0]: torn")]


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(BatchRejected(2, "bad shape"), id="rejected"),
        pytest.param(BatchFinished(2, ["B", "extra"]), id="wrong-length"),
        pytest.param(BatchRaised(2, "E: x"), id="raised-retries-spent"),
    ],
)
def test_group_failure_suppresses_an_in_flight_sibling_whose_batch_fails(event: Any) -> None:
    """In-flight siblings are SUPPRESSED at their commit, whatever ends their batch."""
    core, out = make(
        Pages(batch_size=1, recovery=ro.RecoveryPolicy.retry_batch(max_retries=0)),
        [["a", "b"]],
        workers=[("w1", "rows", 2)],
    )
    assert d(out) == [(1, "w1", "rows", [["a"]]), (2, "w1", "rows", [["b"]])]
    finish(core, 1, [ro.GroupFailure("torn")])
    out = core.handle(event)
    assert outputs(out) == [ro.OutputIssue(S, "doc[0]/page[0]: torn")]
    assert (core.calls[0].failed, core.calls[0].suppressed) == (1, 1)


def test_group_failure_suppresses_a_sibling_requeued_after_worker_loss() -> None:
    core, out = make(
        Pages(batch_size=1), [["a", "b"]], workers=[("w1", "rows", 1), ("w2", "rows", 1)]
    )
    assert d(out) == [(1, "w1", "rows", [["a"]]), (2, "w2", "rows", [["b"]])]
    finish(core, 1, [ro.GroupFailure("torn")])
    out = core.handle(WorkerLost("w2"))
    assert d(out) == []
    assert outputs(out) == [ro.OutputIssue(S, "doc[0]/page[0]: torn")]


def test_group_failure_suppresses_siblings_that_become_ready_later() -> None:
    class TwoStep(ro.Pipeline):
        def __init__(self) -> None:
            self.first = ro.RayModule(Identity).ray_options(batch_size=1)
            self.rows = ro.RayModule(Identity).ray_options(batch_size=1)

        def forward(self, doc: ro.Port) -> ro.Port:
            return ro.F.reduce(self.rows(self.first(ro.F.expand(doc, domain="page"))))

    core, out = make(TwoStep(), [["a", "b"]], workers=[("f1", "first", 1), ("w1", "rows", 1)])
    assert d(out) == [(1, "f1", "first", [["a"]])]
    out = finish(core, 1, ["a1"])
    assert d(out) == [(2, "f1", "first", [["b"]]), (3, "w1", "rows", [["a1"]])]
    finish(core, 3, [ro.GroupFailure("torn")])
    out = core.handle(BatchFinished(2, ["b1"]))  # b's Grain for rows is born suppressed
    check_core(core)
    assert d(out) == []
    assert outputs(out) == [ro.OutputIssue(S, "doc[0]/page[0]: torn")]


# =============================================================================
# Illegal transitions carry the story
# =============================================================================
@pytest.mark.no_core_invariants
def test_settling_an_item_twice_is_an_invalid_transition() -> None:
    core, _ = make(Flat(), ["a"])
    entity = core.active[0].roots[0]
    slot = core.calls[0].out_slots[0]
    core._settle(entity, slot, "A")
    with pytest.raises(ro.InvalidTransition, match=r"doc\[0\].*settled") as info:
        core._settle(entity, slot, "B")
    assert info.value.story == ("held 'A'", "offered 'B'")


def test_pending_items_are_pending_until_commit() -> None:
    core, _ = make(Flat(), ["a"])
    entity = core.active[0].roots[0]
    assert entity.items[core.calls[0].out_slots[0]] is PENDING
    out = finish(core, 1, ["A"])
    assert outputs(out) == ["A"]


class TwoStage(ro.Pipeline):
    """first (batch 2) -> rows (isolate_tail, batch 2): rows reach ``rows`` over time."""

    def __init__(self) -> None:
        self.first = ro.RayModule(Identity).ray_options(batch_size=2)
        self.rows = ro.RayModule(Identity).ray_options(
            batch_size=2, recovery=ro.RecoveryPolicy.isolate_tail(max_retries=1)
        )

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.rows(self.first(doc))


def test_isolate_tail_never_fails_a_healthy_row_after_worker_loss() -> None:
    core, out = make(
        TwoStage(),
        ["a", "p", "q"],
        workers=[("f1", "first", 1), ("w1", "rows", 1), ("w2", "rows", 1)],
    )
    assert d(out) == [(1, "f1", "first", [["a", "p"]])]
    out = finish(core, 1, ["a", "p"])
    assert d(out) == [(2, "f1", "first", [["q"]]), (3, "w1", "rows", [["a", "p"]])]
    out = core.handle(BatchRaised(3, "ValueError: p"))  # retry behind the queue
    assert d(out) == [(4, "w1", "rows", [["a", "p"]])]
    out = core.handle(BatchRaised(4, "ValueError: p"))  # retries spent: halves
    assert d(out) == [(5, "w1", "rows", [["a"]]), (6, "w2", "rows", [["p"]])]
    out = finish(core, 2, ["q"])  # a fresh row for rows, poisoned too
    assert d(out) == []
    core.handle(WorkerLost("w1"))  # a, healthy, goes back to the queue
    out = core.handle(WorkerAdded("w3", 1, 1))
    assert d(out) == [(7, "w3", "rows", [["a", "q"]])]
    out = core.handle(BatchRaised(7, "ValueError: q"))
    out += core.handle(BatchRaised(6, "ValueError: p"))
    done = drain(core, out, poison={"p", "q"})[0].outputs[0]
    assert done[0] == "A"  # the healthy row must not FAIL


# =============================================================================
# The transition table
# =============================================================================
def test_the_transition_table() -> None:
    from airflow_provider_rayorch.rayorch.runtime.phases import TRANSITIONS, GrainEvent, GrainPhase

    R, F, D, S = GrainPhase.READY, GrainPhase.IN_FLIGHT, GrainPhase.DONE, GrainPhase.SUPPRESSED
    assert TRANSITIONS == {
        (R, GrainEvent.DISPATCH): F,
        (R, GrainEvent.SUPPRESS): S,
        (F, GrainEvent.COMMIT): D,
        (F, GrainEvent.RETRY): R,
        (F, GrainEvent.SUPPRESS): S,
    }
    # DONE and SUPPRESSED are terminal
    assert not [key for key in TRANSITIONS if key[0] in (D, S)]


@pytest.mark.parametrize(
    ("event", "phase"),
    [
        pytest.param("COMMIT", "done", id="commit-twice"),
        pytest.param("DISPATCH", "done", id="dispatch-a-committed-grain"),
        pytest.param("RETRY", "done", id="retry-a-committed-grain"),
        pytest.param("SUPPRESS", "done", id="suppress-a-committed-grain"),
    ],
)
def test_an_illegal_transition_raises_with_the_grains_story(event: str, phase: str) -> None:
    from airflow_provider_rayorch.rayorch.runtime.phases import GrainEvent, move

    core, _ = make(Flat(recovery=ro.RecoveryPolicy.retry_batch(max_retries=1)), ["a"])
    batch = core._batches[1]
    grain = batch.grains[0]
    out = core.handle(BatchRaised(1, "E: x"))
    finish(core, d(out)[0][0], ["A"])
    with pytest.raises(ro.InvalidTransition) as info:
        move(grain, GrainEvent[event])
    err = info.value
    assert (err.phase, err.event) == (phase, event.lower())
    assert err.story == (
        "created ready",
        "dispatch (generation 1)",
        "retry",
        "dispatch (generation 2)",
        "commit",
    )
    assert "Grain rows@doc[0] (generation 2)" in str(err)
    assert grain.phase.value == "done"  # unchanged


# =============================================================================
# The invariant check itself sees corruption
# =============================================================================
@pytest.mark.no_core_invariants
@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        pytest.param(lambda core: setattr(core.calls[0], "ready", 5), "ready=5", id="counter"),
        pytest.param(lambda core: core._batches.clear(), "workers and core disagree", id="batches"),
        pytest.param(
            lambda core: setattr(core.active[0], "outstanding", 0), "pending", id="outstanding"
        ),
        pytest.param(
            lambda core: core.calls[0].queue.push(
                next(g for g, _ in core.calls[0].queue._order if g.phase.value == "ready")
            ),
            "queued twice",
            id="queued-twice",
        ),
        pytest.param(
            lambda core: setattr(core._batches[1], "gens", [0]),
            "in flight in None batches",
            id="stale-generation",
        ),
    ],
)
def test_check_core_detects_corruption(corrupt: Any, message: str) -> None:
    core, _ = make(Flat(batch_size=1), ["a", "b"], workers=[("w1", "rows", 1)])
    check_core(core)
    corrupt(core)
    with pytest.raises(AssertionError, match=message):
        check_core(core)


# =============================================================================
# A worker killed on purpose (a hung batch): its other batches run again uncharged
# =============================================================================
def _hung_on_a_worker_with_three_batches(charge: bool) -> tuple[Core, list[Any]]:
    core, out = make(
        Flat(batch_size=1, recovery=ro.RecoveryPolicy.retry_batch(max_retries=1, infra_retries=0)),
        ["a", "b", "c"],
        workers=[("w1", "rows", 3)],
    )
    assert d(out) == [
        (1, "w1", "rows", [["a"]]),
        (2, "w1", "rows", [["b"]]),
        (3, "w1", "rows", [["c"]]),
    ]
    # The backend saw batch 1 hang: it is charged under the Call's RecoveryPolicy...
    out = core.handle(BatchRaised(1, "batch_timeout_s=5 exceeded"))
    assert d(out) == [(4, "w1", "rows", [["a"]])]
    # ...then kills the actor, with b, c and the retried a still queued on it.
    out = core.handle(WorkerLost("w1", "killed after batch_timeout_s=5", charge=charge))
    assert d(out) == []
    return core, core.handle(WorkerAdded("w2", 0, 3))


def test_a_worker_lost_uncharged_sends_its_batches_again_without_an_infra_retry() -> None:
    core, out = _hung_on_a_worker_with_three_batches(charge=False)
    # Every batch left on w1 runs again, in FIFO order, under a new generation.
    assert d(out) == [
        (5, "w2", "rows", [["b"]]),
        (6, "w2", "rows", [["c"]]),
        (7, "w2", "rows", [["a"]]),
    ]
    grains = [core._batches[b].grains[0] for b in (5, 6, 7)]
    assert [(g.infra, g.retries, g.gen) for g in grains] == [(0, 0, 2), (0, 0, 2), (0, 1, 3)]
    assert core.handle(BatchFinished(2, ["late"])) == []  # the killed actor's report: stale
    assert core.stale_reports == 1
    finish(core, 5, ["B"])
    finish(core, 6, ["C"])
    out = core.handle(BatchRaised(7, "batch_timeout_s=5 exceeded"))  # a's retry is spent
    assert outputs(out) == [ro.OutputIssue(FL, "doc[0]: batch_timeout_s=5 exceeded"), "B", "C"]
    assert core.calls[0].retries == 4  # a's recovery retry and three uncharged re-sends


def test_a_worker_lost_charged_still_charges_the_batch_it_was_running() -> None:
    core, out = _hung_on_a_worker_with_three_batches(charge=True)
    # b was running (the oldest on w1): charged, over infra_retries=0, it FAILs. c and a
    # were on the dead worker too: each runs alone on w2, so a death it causes again is
    # charged to it and never to a batch beside it.
    assert d(out) == [(5, "w2", "rows", [["c"]])]
    assert d(finish(core, 5, ["C"])) == [(6, "w2", "rows", [["a"]])]
    out = finish(core, 6, ["A"])
    assert outputs(out) == [
        "A",
        ro.OutputIssue(FL, "doc[1]: killed after batch_timeout_s=5 (infra_retries=0 exhausted)"),
        "C",
    ]


# =============================================================================
# The ready queue is injected
# =============================================================================
def test_the_ready_queue_factory_is_injected() -> None:
    from airflow_provider_rayorch.rayorch.runtime.queues import ReadyQueue

    made: list[tuple[bool, ReadyQueue]] = []

    class NewestFirst(ReadyQueue):
        __slots__ = ()

        def take(self, batch_size: int) -> list[Any]:
            return list(reversed(super().take(batch_size)))

    def factory(single_parent: bool) -> ReadyQueue:
        made.append((single_parent, NewestFirst(single_parent)))
        return made[-1][1]

    plan = Flat(batch_size=3).compile()
    core = Core(plan, [["a", "b", "c"]], clock=lambda: 0.0, ready_queue=factory)
    assert [q for _, q in made] == [c.queue for c in core.calls]
    assert made[0][0] is False
    out = core.handle(WorkerAdded("w1", 0, 1)) + core.start()
    assert d(out) == [(1, "w1", "rows", [["c", "b", "a"]])]
    out = finish(core, 1, ["C", "B", "A"])
    assert outputs(out) == ["A", "B", "C"]
