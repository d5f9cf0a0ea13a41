"""The actor behind every pool: one UDF instance, batches in, reports out."""

from __future__ import annotations

import os
import pickle
from collections.abc import Mapping, Sequence
from typing import Any

import ray
from ray.exceptions import ObjectLostError, OwnerDiedError

from ..outcomes import GroupFailure, RecordFailure
from .remote_values import Box, collect_boxes, materialize
from .worker import instantiate, run_batch

__all__ = ["PoolWorker", "length_fact"]

_FAILURES = (RecordFailure, GroupFailure)
_LOST = (ObjectLostError, OwnerDiedError)


def length_fact(value: Any) -> int:
    """The length an expand would split ``value`` into, or -1 if it is no sequence."""
    if isinstance(value, (str, bytes, bytearray, memoryview, Mapping)):
        return -1
    if isinstance(value, Sequence) or (hasattr(value, "__len__") and hasattr(value, "shape")):
        return len(value)
    return -1


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

    def ready(self) -> tuple[int, str]:
        return os.getpid(), ray.get_runtime_context().get_node_id()

    def pid(self) -> int:
        return os.getpid()

    @ray.method(num_returns=2)
    def run(self, call: int, columns: list[list[Any]]) -> tuple[tuple[Any, ...], Any]:
        """Run Call ``call`` on one batch; return ``(report, values)``: the report is
        small, the values stay remote."""
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
        lengths: list[list[int] | None] = []
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
