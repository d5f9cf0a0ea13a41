"""A stateful test of the commit protocol on the core.

Hypothesis plays an adversarial executor: it dispatches (the core decides),
finishes batches with values, RecordFailures and GroupFailures (skipping rows the
core withdrew, as a backend may), raises, returns
results of the wrong length, reports twice, reports batches of lost workers,
loses and adds workers, in any order. After every step the core's invariants
hold (``support.check_core``): every Grain is in exactly one phase and, if in
flight, in exactly one live batch; ready counters equal live queue entries;
settled Items match Grain phases. No Item is settled twice (the core would
raise ``InvalidTransition``), no microbatch completes twice or with missing
outputs, stale and duplicate reports are counted and never raised, and the
run never stalls: once the executor stops misbehaving, it finishes.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

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
    RunFinished,
    Withdraw,
    WorkerAdded,
    WorkerLost,
)
from airflow_provider_rayorch.rayorch.runtime.lineage import PENDING

from ..support import HYPOTHESIS, Identity, check_core, check_finished

policies = st.builds(
    lambda make, retries, infra: make(max_retries=retries, infra_retries=infra),
    st.sampled_from(
        [
            ro.RecoveryPolicy.retry_batch,
            ro.RecoveryPolicy.retry_tail,
            ro.RecoveryPolicy.isolate_tail,
        ]
    ),
    st.integers(0, 2),
    st.integers(0, 2),
)
module_options = st.fixed_dictionaries(
    {
        "batch_size": st.sampled_from([1, 1, 2, 3]),
        "batching": st.sampled_from(["any_parent", "single_parent"]),
        "max_batches_in_flight": st.integers(1, 3),
        "recovery": policies,
    }
)


class Protocol(ro.Pipeline):
    """doc -> pages -> rows -> rows -> reduce -> assemble(gathered, doc); and a root
    Call. Two Calls in a row in the page Domain: a page's Grain for the second may be
    born after a sibling's GroupFailure there."""

    def __init__(self, rows: dict[str, Any], assemble: dict[str, Any]) -> None:
        self.rows = ro.RayModule(Identity).ray_options(**rows)
        self.assemble = ro.function(lambda xs, ys: xs).ray_options(**assemble)

    def forward(self, doc: ro.Port) -> tuple[ro.Port, ro.Port]:
        pages = ro.F.expand(doc, domain="page")
        gathered = ro.F.reduce(self.rows(self.rows(pages)))
        return self.assemble(gathered, doc), self.rows(doc)


class CommitProtocol(RuleBasedStateMachine):
    core: Core

    @initialize(
        docs=st.lists(st.lists(st.integers(0, 9), max_size=4), min_size=1, max_size=5),
        rows=module_options,
        assemble=module_options,
        input_batch_size=st.one_of(st.none(), st.integers(1, 3)),
        max_active=st.integers(1, 3),
        workers=st.lists(st.tuples(st.integers(0, 1), st.integers(1, 3)), min_size=1, max_size=4),
    )
    def start(
        self,
        docs: list[list[int]],
        rows: dict[str, Any],
        assemble: dict[str, Any],
        input_batch_size: int | None,
        max_active: int,
        workers: list[tuple[int, int]],
    ) -> None:
        self.plan = Protocol(rows, assemble).compile()
        self.core = Core(
            self.plan,
            [docs],
            input_batch_size=input_batch_size,
            max_active_input_batches=max_active,
            clock=lambda: 0.0,
        )
        self.outstanding: dict[int, Dispatch] = {}  # batch -> its Dispatch
        self.withdrawn: dict[int, set[int]] = {}  # batch -> rows the core withdrew
        self.reported: list[Any] = []  # events of batches already reported
        self.lost: list[int] = []  # batches of lost workers
        self.alive: dict[Any, int] = {}  # worker -> module
        self.spawned = 0
        self.batch_ids: set[int] = set()
        self.done: set[int] = set()
        self.run_finished = 0
        self.aborted = False
        for module, capacity in workers:
            self._take(self.core.handle(self._new_worker(module, capacity)))
        self._take(self.core.start())

    # -- helpers -------------------------------------------------------------------
    def _new_worker(self, module: int, capacity: int) -> WorkerAdded:
        self.spawned += 1
        worker = f"w{self.spawned}"
        self.alive[worker] = module
        return WorkerAdded(worker, module, capacity)

    def _take(self, commands: list[Any]) -> None:
        for c in commands:
            if type(c) is Dispatch:
                assert c.batch not in self.batch_ids, "a batch id was reused"
                assert c.worker in self.alive, "dispatch to a dead or unknown worker"
                assert self.alive[c.worker] == c.node.module
                assert all(len(col) == len(c.columns[0]) > 0 for col in c.columns)
                for grain in self.core._batches[c.batch].grains:
                    parent = grain.entity.parent
                    assert not (parent and parent.gfail and c.node.id in parent.gfail), (
                        f"{grain.describe()} dispatched after a sibling's GroupFailure"
                    )
                self.batch_ids.add(c.batch)
                self.outstanding[c.batch] = c
            elif type(c) is Withdraw:
                assert c.batch in self.outstanding, "withdrew rows of a batch not in flight"
                dispatch = self.outstanding[c.batch]
                assert c.worker == dispatch.worker
                grains = self.core._batches[c.batch].grains
                for i in c.rows:
                    parent = grains[i].entity.parent
                    assert parent is not None
                    assert parent.gfail, "withdrew a row of a healthy parent"
                    assert dispatch.node.id in parent.gfail
                self.withdrawn.setdefault(c.batch, set()).update(c.rows)
            elif type(c) is MicrobatchDone:
                mb = c.microbatch
                assert mb.index not in self.done, "a microbatch completed twice"
                self.done.add(mb.index)
                for port in mb.outputs:
                    assert len(port) == mb.count
                    assert all(v is not PENDING for v in port)
                assert len(mb.source_outcomes) == mb.count
            elif type(c) is RunFinished:
                self.run_finished += 1
                assert self.run_finished == 1, "RunFinished twice"
            elif type(c) is Abort:
                self.aborted = True
            else:  # pragma: no cover
                raise AssertionError(c)

    def _pick(self, data: st.DataObject) -> Dispatch:
        batch = data.draw(st.sampled_from(sorted(self.outstanding)))
        return self.outstanding.pop(batch)

    def _report(self, event: Any) -> None:
        self.reported.append(event)
        self._take(self.core.handle(event))

    def live(self) -> bool:
        return not self.aborted and not self.core.finished

    # -- rules ---------------------------------------------------------------------
    @precondition(lambda self: self.outstanding and not self.aborted)
    @rule(data=st.data())
    def finish(self, data: st.DataObject) -> None:
        cmd = self._pick(data)
        withdrawn = self.withdrawn.pop(cmd.batch, set())
        rows: list[Any] = []
        for i, value in enumerate(cmd.columns[0]):
            kind = data.draw(st.sampled_from(["value", "value", "value", "record", "group"]))
            if i in withdrawn and data.draw(st.booleans()):
                rows.append(WITHDRAWN)
            elif kind == "record":
                rows.append(ro.RecordFailure("bad"))
            elif kind == "group":
                rows.append(ro.GroupFailure("torn"))
            else:
                rows.append(value)
        self._report(BatchFinished(cmd.batch, rows))

    @precondition(lambda self: self.outstanding and not self.aborted)
    @rule(data=st.data())
    def finish_healthy(self, data: st.DataObject) -> None:
        """(Healthy batches are the common case: weight them up.)"""
        cmd = self._pick(data)
        withdrawn = self.withdrawn.pop(cmd.batch, set())
        rows = [WITHDRAWN if i in withdrawn else v for i, v in enumerate(cmd.columns[0])]
        self._report(BatchFinished(cmd.batch, rows))

    @precondition(lambda self: self.outstanding and not self.aborted)
    @rule(data=st.data())
    def raise_(self, data: st.DataObject) -> None:
        self._report(BatchRaised(self._pick(data).batch, "RuntimeError: boom"))

    @precondition(lambda self: self.outstanding and not self.aborted)
    @rule(data=st.data(), wrong_length=st.booleans())
    def reject(self, data: st.DataObject, wrong_length: bool) -> None:
        cmd = self._pick(data)
        if wrong_length:
            self._report(BatchFinished(cmd.batch, [*cmd.columns[0], "extra"]))
        else:
            self._report(BatchRejected(cmd.batch, "bad shape"))

    @precondition(lambda self: self.reported and not self.aborted)
    @rule(data=st.data())
    def duplicate(self, data: st.DataObject) -> None:
        event = data.draw(st.sampled_from(self.reported))
        before = (self.core.duplicate_reports, self.core.stale_reports)
        assert self.core.handle(event) == []
        after = (self.core.duplicate_reports, self.core.stale_reports)
        assert sum(after) == sum(before) + 1

    @precondition(lambda self: self.lost and not self.aborted)
    @rule(data=st.data(), kind=st.sampled_from(["finished", "raised", "rejected"]))
    def stale(self, data: st.DataObject, kind: str) -> None:
        batch = data.draw(st.sampled_from(self.lost))
        event = {
            "finished": BatchFinished(batch, []),
            "raised": BatchRaised(batch, "E: late"),
            "rejected": BatchRejected(batch, "late"),
        }[kind]
        before = self.core.stale_reports
        assert self.core.handle(event) == []
        assert self.core.stale_reports == before + 1

    @precondition(lambda self: self.alive and not self.aborted)
    @rule(data=st.data())
    def lose_worker(self, data: st.DataObject) -> None:
        worker = data.draw(st.sampled_from(sorted(self.alive)))
        held = sorted(self.core.batches_on(worker))
        assert held == sorted(b for b, c in self.outstanding.items() if c.worker == worker)
        del self.alive[worker]
        for batch in held:
            del self.outstanding[batch]
            self.lost.append(batch)
        self._take(self.core.handle(WorkerLost(worker, "killed")))

    @precondition(lambda self: len(self.alive) < 5 and not self.aborted)
    @rule(module=st.integers(0, 1), capacity=st.integers(1, 3))
    def add_worker(self, module: int, capacity: int) -> None:
        self._take(self.core.handle(self._new_worker(module, capacity)))

    # -- invariants ------------------------------------------------------------------
    @invariant()
    def core_is_consistent(self) -> None:
        check_core(self.core)
        assert self.core.in_flight == len(self.outstanding)

    @invariant()
    def never_stalls(self) -> None:
        """With nothing in flight, ready Grains wait only for a missing worker."""
        if self.aborted or self.core.in_flight:
            return
        for pool in self.core._pools:
            if pool.ready:
                assert not pool.workers, "ready Grains, idle workers, nothing in flight"

    def teardown(self) -> None:
        """Stop misbehaving: the run must then finish with complete outputs."""
        if not hasattr(self, "core") or self.aborted:
            return
        for module in (0, 1):
            if module not in self.alive.values():
                self._take(self.core.handle(self._new_worker(module, 2)))
        steps = 0
        while self.outstanding:
            steps += 1
            assert steps < 1000, "the run does not converge"
            batch = min(self.outstanding)
            cmd = self.outstanding.pop(batch)
            self._take(self.core.handle(BatchFinished(batch, list(cmd.columns[0]))))
            check_core(self.core)
        assert self.core.finished, "the run stalled"
        check_finished(self.core)
        assert self.run_finished == 1
        assert len(self.done) == self.core.microbatches_done


CommitProtocol.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    **HYPOTHESIS,
    suppress_health_check=[HealthCheck.too_slow],
)
test_commit_protocol = CommitProtocol.TestCase
