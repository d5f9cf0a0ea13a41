"""The actor behind every pool: one UDF instance, tasks in, typed replies out.

``run`` executes on the actor's default thread, one batch at a time and in the
order sent. ``withdraw`` and ``running`` have their own thread (the ``control``
concurrency group): the driver can mark rows of a batch still queued here as
moot, and ask how long the current batch has been running, while a batch runs.
A batch's input objects arrive as arguments of ``run``, resolved by Ray
(``task_inputs``).
"""

from __future__ import annotations

import os
import pickle
import time
from typing import Any

import ray

from ..outcomes import GroupFailure, RecordFailure
from ..runtime.events import WITHDRAWN
from .facts import fact_tree, length_fact
from .protocol import CallSpec, Done, Raised, Rejected, Reply, Running, Task
from .remote_values import PackedRefs, column_boxes, materialize
from .withdrawals import Withdrawals
from .worker import instantiate, run_batch

__all__ = ["CONCURRENCY_GROUPS", "PoolWorker", "length_fact"]

_FAILURES = (RecordFailure, GroupFailure, type(WITHDRAWN))
#: The concurrency groups of the actor: control calls must not wait behind ``run``.
CONCURRENCY_GROUPS = {"control": 1}


class PoolWorker:
    """Runs one UDF instance; created as a Ray actor by the Ray backend."""

    def __init__(
        self,
        udf: type,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        calls: dict[int, CallSpec],
    ) -> None:
        self.instance = instantiate(udf, args, kwargs)
        #: call id -> what running it needs: sent once, not per batch.
        self.calls = calls
        self.withdrawals = Withdrawals()
        #: (epoch, batch, monotonic start) of the batch running now, or None.
        self.current: tuple[int, int, float] | None = None

    def ready(self) -> tuple[int, str]:
        return os.getpid(), ray.get_runtime_context().get_node_id()

    def pid(self) -> int:
        return os.getpid()

    @ray.method(concurrency_group="control")
    def withdraw(self, epoch: int, batch: int, rows: list[int]) -> bool:
        """Skip ``rows`` of batch ``(epoch, batch)`` if it has not started (their
        results are moot); False when it has."""
        return self.mark_withdrawn(epoch, batch, rows)

    @ray.method(concurrency_group="control")
    def running(self) -> Running | None:
        """The batch running now and for how long, or None when idle."""
        return self.now_running()

    @ray.method(num_returns=2)
    def run(self, task: Task, *inputs: Any) -> tuple[Reply, Any]:
        """Run ``task`` on ``inputs`` (its input objects, resolved by Ray); return
        ``(reply, values)``: the reply is small, the values stay remote."""
        return self.run_task(task, inputs)

    # The same as plain methods (a shared process calls them on a slot's worker).
    def mark_withdrawn(self, epoch: int, batch: int, rows: list[int]) -> bool:
        return self.withdrawals.mark((epoch, batch), rows)

    def now_running(self) -> Running | None:
        current = self.current
        if current is None:
            return None
        epoch, batch, started = current
        return Running(epoch, batch, time.monotonic() - started)

    def run_task(self, task: Task, inputs: tuple[Any, ...]) -> tuple[Reply, Any]:
        """``inputs`` are the values of the task's input objects, in ``column_boxes``
        order. Withdrawn rows are skipped and reported as ``WITHDRAWN``; a batch with
        no row left does not call the UDF."""
        columns = task.columns
        boxes = column_boxes(columns)
        if len(boxes) != len(inputs):
            return Raised(f"{len(inputs)} input objects for {len(boxes)} references"), None
        fetched = dict(zip(boxes, inputs, strict=True))
        skip = self.withdrawals.start(task.key) if task.batch else None
        self.current = (task.epoch, task.batch, time.monotonic())
        try:
            if skip:
                columns = [c.unpack() if type(c) is PackedRefs else c for c in columns]
                n = len(columns[0])
                keep = [i for i in range(n) if i not in skip]
                if not keep:
                    return Done([WITHDRAWN] * n, [], [], [], 0.0), []
                kept = [[c[i] for i in keep] for c in columns]
                reply, values = self._run(task.call, kept, fetched)
                return _spread(reply, values, keep, n)
            return self._run(task.call, columns, fetched)
        finally:
            self.current = None

    def _run(self, call: int, columns: list[Any], fetched: dict[int, Any]) -> tuple[Reply, Any]:
        spec = self.calls[call]
        if fetched:
            columns = [
                column.materialize(fetched)
                if type(column) is PackedRefs
                else [materialize(v, fetched) for v in column]
                for column in columns
            ]
        outcome = run_batch(self.instance, spec.name, columns, spec.kwargs, spec.n_outputs)
        if outcome.rows is None:
            if outcome.error is not None:
                return Raised(outcome.error, outcome.busy_s, _portable(outcome.exception)), None
            return Rejected(outcome.rejected or "rejected", outcome.busy_s), None
        rows = outcome.rows
        status: list[Any] | None = [r if isinstance(r, _FAILURES) else None for r in rows]
        if not any(s is not None for s in status):  # type: ignore[union-attr]
            status = None
        lengths: list[list[Any] | None] = []
        truths: list[list[Any] | None] = []
        inner: list[list[Any] | None] = []
        for k, needs in enumerate(spec.needs):
            column = (
                rows
                if spec.n_outputs == 1
                else [r[k] if not isinstance(r, _FAILURES) else None for r in rows]
            )
            lengths.append([length_fact(v) for v in column] if needs.lengths else None)
            truths.append([bool(v) for v in column] if 0 in needs.truths else None)
            inner.append(None if needs.flat else [fact_tree(v, needs) for v in column])
        return Done(status, lengths, truths, inner, outcome.busy_s), rows


def _spread(reply: Reply, rows: Any, keep: list[int], n: int) -> tuple[Reply, Any]:
    """A reply and rows for the ``keep`` rows of a batch of ``n``, widened back to
    ``n`` with the skipped rows as ``WITHDRAWN``."""
    if type(reply) is not Done:
        return reply, rows

    def widen(column: list[Any] | None, fill: Any) -> list[Any] | None:
        if column is None:
            return None
        out = [fill] * n
        for j, i in enumerate(keep):
            out[i] = column[j]
        return out

    status = reply.status if reply.status is not None else [None] * len(keep)
    return Done(
        widen(status, WITHDRAWN),
        [widen(c, "withdrawn") for c in reply.lengths],
        [widen(c, False) for c in reply.truths],
        [widen(c, None) for c in reply.inner],
        reply.busy_s,
    ), widen(rows, WITHDRAWN)


def _portable(exc: BaseException | None) -> BaseException | None:
    """The exception if it survives pickling (it travels back to the driver), else None."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return None
    return exc
