"""The actor behind every pool: one UDF instance, batches in, reports out.

``run`` executes on the actor's default thread, one batch at a time and in the
order sent. ``withdraw`` has its own thread (the ``control`` concurrency group), so
the driver can mark rows of a batch still queued here as moot while another batch
runs; ``run`` skips them when that batch starts.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Mapping, Sequence
from typing import Any

import ray
from ray.exceptions import ObjectLostError, OwnerDiedError

from ..outcomes import GroupFailure, RecordFailure
from ..runtime.events import WITHDRAWN
from .remote_values import Box, collect_boxes, materialize
from .worker import instantiate, run_batch

__all__ = ["PoolWorker", "length_fact"]

_FAILURES = (RecordFailure, GroupFailure, type(WITHDRAWN))
#: The concurrency groups of the actor: ``withdraw`` must not wait behind ``run``.
CONCURRENCY_GROUPS = {"control": 1}
_LOST = (ObjectLostError, OwnerDiedError)


def length_fact(value: Any) -> int | str:
    """The length an expand would split ``value`` into, or, if it is no sequence,
    its type's name (for the error message)."""
    if isinstance(value, (str, bytes, bytearray, memoryview, Mapping)):
        return type(value).__name__
    if isinstance(value, Sequence) or (hasattr(value, "__len__") and hasattr(value, "shape")):
        return len(value)
    return type(value).__name__


class PoolWorker:
    """Runs one UDF instance; created as a Ray actor by the Ray backend."""

    def __init__(
        self,
        udf: type,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        calls: dict[int, tuple[str, dict[str, Any], int, tuple[tuple[bool, bool], ...]]],
    ) -> None:
        self.instance = instantiate(udf, args, kwargs)
        #: call id -> (name, static kwargs, outputs, facts): sent once, not per batch.
        self.calls = calls
        #: batch id -> rows to skip, for batches not started yet.
        self.withdrawn: dict[int, set[int]] = {}
        self.last_started = 0

    def ready(self) -> tuple[int, str]:
        return os.getpid(), ray.get_runtime_context().get_node_id()

    def pid(self) -> int:
        return os.getpid()

    @ray.method(concurrency_group="control")
    def withdraw(self, batch: int, rows: list[int]) -> None:
        """Skip ``rows`` of ``batch`` if it has not started (their results are moot)."""
        if batch > self.last_started:
            self.withdrawn.setdefault(batch, set()).update(rows)

    @ray.method(num_returns=2)
    def run(self, task: tuple[int, int, list[list[Any]]]) -> tuple[tuple[Any, ...], Any]:
        """Run ``task`` = (Call id, batch id, columns); return ``(report, values)``:
        the report is small, the values stay remote. Withdrawn rows are skipped and
        reported as ``WITHDRAWN``; a batch with no row left does not call the UDF."""
        call, batch, columns = task
        self.last_started = max(self.last_started, batch)
        skip = self.withdrawn.pop(batch, None)
        if self.withdrawn:  # marks that arrived after their batch had started
            for old in [b for b in self.withdrawn if b < batch]:
                del self.withdrawn[old]
        if skip:
            keep = [i for i in range(len(columns[0])) if i not in skip]
            if not keep:
                return ("ok", [WITHDRAWN] * len(columns[0]), [], [], 0.0), []
            report, values = self._run(call, [[c[i] for i in keep] for c in columns])
            return _spread(report, values, keep, len(columns[0]))
        return self._run(call, columns)

    def _run(self, call: int, columns: list[list[Any]]) -> tuple[tuple[Any, ...], Any]:
        name, kwargs, n_outputs, facts = self.calls[call]
        boxes: dict[int, Box] = {}
        for column in columns:
            for value in column:
                collect_boxes(value, boxes)
        if boxes:
            try:
                fetched = dict(zip(boxes, ray.get([b.ref for b in boxes.values()]), strict=True))
            except _LOST:
                return ("lost", _lost_refs(boxes.values())), None
            columns = [[materialize(v, fetched) for v in column] for column in columns]
        outcome = run_batch(self.instance, name, columns, kwargs, n_outputs)
        if outcome.rows is None:
            if outcome.error is not None:
                return ("raised", outcome.error, outcome.busy_s, _portable(outcome.exception)), None
            return ("rejected", outcome.rejected, outcome.busy_s), None
        rows = outcome.rows
        status = [r if isinstance(r, _FAILURES) else None for r in rows]
        if not any(s is not None for s in status):
            status = None  # type: ignore[assignment]
        lengths: list[list[int | str] | None] = []
        truths: list[list[bool] | None] = []
        for k, (need_length, need_truth) in enumerate(facts):
            column = (
                rows
                if n_outputs == 1
                else [r[k] if not isinstance(r, _FAILURES) else None for r in rows]
            )
            lengths.append([length_fact(v) for v in column] if need_length else None)
            truths.append([bool(v) for v in column] if need_truth else None)
        return ("ok", status, lengths, truths, outcome.busy_s), rows


def _spread(
    report: tuple[Any, ...], rows: Any, keep: list[int], n: int
) -> tuple[tuple[Any, ...], Any]:
    """A report and rows for the ``keep`` rows of a batch of ``n``, widened back to
    ``n`` with the skipped rows as ``WITHDRAWN``."""
    if report[0] != "ok":
        return report, rows
    _, status, lengths, truths, busy = report

    def widen(column: list[Any] | None, fill: Any) -> list[Any] | None:
        if column is None:
            return None
        out = [fill] * n
        for j, i in enumerate(keep):
            out[i] = column[j]
        return out

    full_status = widen(status if status is not None else [None] * len(keep), WITHDRAWN)
    full_rows = widen(rows, WITHDRAWN)
    return (
        "ok",
        full_status,
        [widen(c, "withdrawn") for c in lengths],
        [widen(c, False) for c in truths],
        busy,
    ), full_rows


def _portable(exc: BaseException | None) -> BaseException | None:
    """The exception if it survives pickling (it travels back to the driver), else None."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return None
    return exc


def _lost_refs(boxes: Any) -> list[str]:
    lost = []
    for box in boxes:
        try:
            ray.get(box.ref, timeout=30)
        except _LOST:
            lost.append(box.ref.hex())
        except Exception:
            lost.append(box.ref.hex())
    return lost
