"""Run metrics: per-Call figures and the dispatch/report timeline."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .state import BatchRecord, CallState

__all__ = ["TIMELINE_CAP", "Timeline", "call_metrics"]

#: At most this many timeline records are kept per run.
TIMELINE_CAP = 200_000


def call_metrics(call: CallState) -> dict[str, Any]:
    """A Call's figures as ``RunResult.calls`` reports them."""
    sizes = sum(k * v for k, v in call.batch_hist.items())
    return {
        "name": call.name,
        "replicas": call.pool.replicas,
        "rpcs": call.rpcs,
        "grains_dispatched": call.dispatched,
        "retries": call.retries,
        "suppressed": call.suppressed,
        "withdrawn": call.withdrawn,
        "failed": call.failed,
        "batch_size": call.batch_size,
        "batch_sizes": {str(k): v for k, v in sorted(call.batch_hist.items())},
        "mean_batch": sizes / call.rpcs if call.rpcs else 0.0,
        "busy_s": round(call.busy_s, 6),
        "queue_wait_s": round(call.queue_wait_s, 6),
    }


class Timeline:
    """``("dispatch", t, call, worker, batch, size, queue depth after)`` and
    ``("report", t, call, worker, batch, busy_s, kind)`` records, for run reports; a
    ``lost`` report whose worker's node is known ends with that node's label."""

    __slots__ = ("records",)

    def __init__(self) -> None:
        self.records: list[tuple[Any, ...]] = []

    def dispatch(self, now: float, batch: BatchRecord) -> None:
        if len(self.records) < TIMELINE_CAP:
            call = batch.call
            self.records.append(
                (
                    "dispatch",
                    now,
                    call.name,
                    batch.worker.id,
                    batch.id,
                    len(batch.grains),
                    call.ready,
                )
            )

    def report(
        self, now: float, batch: BatchRecord, busy_s: float, kind: str, node: str | None = None
    ) -> None:
        if len(self.records) < TIMELINE_CAP:
            record = ("report", now, batch.call.name, batch.worker.id, batch.id, busy_s, kind)
            self.records.append(record if node is None else (*record, node))
