"""The actor behind every pool: one UDF instance, tasks in, typed replies out.

``run`` executes on the actor's default thread, one batch at a time and in the
order sent. ``withdraw`` and ``running`` have their own thread (the ``control``
concurrency group): the driver can mark rows of a batch still queued here as
moot, and ask how long the current batch has been running, while a batch runs.
"""

from __future__ import annotations

import os
import pickle
import threading
import time
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import ObjectLostError, OwnerDiedError, RayError

from ..outcomes import GroupFailure, RecordFailure
from ..runtime.events import WITHDRAWN
from .facts import fact_tree, length_fact
from .protocol import CallSpec, Done, InputsLost, Raised, Rejected, Reply, Running, Task
from .remote_values import Box, PackedRefs, collect_boxes, materialize
from .withdrawals import Withdrawals
from .worker import instantiate, run_batch

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["CONCURRENCY_GROUPS", "PoolWorker", "fetch_inputs", "length_fact"]

_FAILURES = (RecordFailure, GroupFailure, type(WITHDRAWN))
#: The concurrency groups of the actor: control calls must not wait behind ``run``.
CONCURRENCY_GROUPS = {"control": 1}
_LOST = (ObjectLostError, OwnerDiedError)


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
        #: Held while inputs are fetched: a shared process gives its slots one lock, so
        #: its threads never wait in ``ray.get`` at once (see ``shared_process``).
        self.fetch_lock = threading.Lock()

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
    def run(self, task: Task) -> tuple[Reply, Any]:
        """Run ``task``; return ``(reply, values)``: the reply is small, the values
        stay remote."""
        return self.run_task(task)

    # The same as plain methods (a shared process calls them on a slot's worker).
    def mark_withdrawn(self, epoch: int, batch: int, rows: list[int]) -> bool:
        return self.withdrawals.mark((epoch, batch), rows)

    def now_running(self) -> Running | None:
        current = self.current
        if current is None:
            return None
        epoch, batch, started = current
        return Running(epoch, batch, time.monotonic() - started)

    def run_task(self, task: Task) -> tuple[Reply, Any]:
        """Withdrawn rows are skipped and reported as ``WITHDRAWN``; a batch with no
        row left does not call the UDF."""
        columns = task.columns
        skip = self.withdrawals.start(task.key) if task.batch else None
        self.current = (task.epoch, task.batch, time.monotonic())
        try:
            if skip:
                columns = [c.unpack() if type(c) is PackedRefs else c for c in columns]
                n = len(columns[0])
                keep = [i for i in range(n) if i not in skip]
                if not keep:
                    return Done([WITHDRAWN] * n, [], [], [], 0.0), []
                reply, values = self._run(task.call, [[c[i] for i in keep] for c in columns])
                return _spread(reply, values, keep, n)
            return self._run(task.call, columns)
        finally:
            self.current = None

    def _run(self, call: int, columns: list[Any]) -> tuple[Reply, Any]:
        spec = self.calls[call]
        boxes: dict[int, Box] = {}
        for column in columns:
            if type(column) is PackedRefs:
                boxes.update((id(box), box) for box in column.boxes)
                continue
            for value in column:
                collect_boxes(value, boxes)
        if boxes:
            try:
                with self.fetch_lock:
                    fetched, lost = fetch_inputs(boxes.items())
            except RayError as exc:
                return Raised(f"inputs could not be fetched: {type(exc).__name__}: {exc}"), None
            if lost:
                return InputsLost(tuple(lost)), None
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


def fetch_inputs(boxes: Iterable[tuple[int, Box]]) -> tuple[dict[int, Any], list[str]]:
    """Fetch each box's object once: ``(values by box key, hex ids of lost objects)``.

    Only a lost object (its node or owner died) is reported lost; any other error
    propagates. Objects are fetched one at a time so that a lost one does not make
    the healthy ones be fetched again."""
    fetched: dict[int, Any] = {}
    lost: list[str] = []
    for key, box in boxes:
        try:
            fetched[key] = ray.get(box.ref)
        except _LOST:
            lost.append(box.ref.hex())
    return fetched, lost


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
