"""The one writer of a run's manifest (``run.json``): the sum of its microbatch
manifests, with the failed-ratio verdict recorded (:mod:`.verdict`), and of its
aggregate record beside it (:mod:`.aggregate_record`).

The driver writes it at the end of a run (:func:`write_run_manifest`); the run task
rewrites a repaired run's (:func:`rewrite_repaired_run_manifest`), keeping the first
run's time and naming the run store's repair records under ``repairs``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.rayorch import summary as summaries
from airflow_provider_rayorch.runs.aggregate import RunAggregate
from airflow_provider_rayorch.runs.aggregate_record import write_aggregate_record
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.verdict import judged

if TYPE_CHECKING:
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["rewrite_repaired_run_manifest", "write_run_manifest"]


def write_run_manifest(
    store: RunStore,
    run_id: str,
    *,
    elapsed_s: float,
    pipeline: str | None,
    fingerprint: str | None,
    max_failed_ratio: float,
    outputs_uri: str | None = None,
    repairs: list[dict[str, Any]] | None = None,
    aggregate: RunAggregate | None = None,
) -> dict[str, Any]:
    """Sum the committed microbatch manifests into the run manifest, judge it against
    ``max_failed_ratio``, write it and return it. ``aggregate``: the driver's running
    sum of this run's commits, so no manifest is read back; else they are read one at
    a time into an aggregate of their own (all at once for a run without a plan
    record, or judged against another ratio than its plan's)."""
    if aggregate is None:
        plan = store.read_plan(run_id)
        if plan is not None and plan.max_failed_ratio == max_failed_ratio:
            committed = sorted(store.committed(run_id))
            found = (store.manifest_record(run_id, i) for i in committed)
            aggregate = RunAggregate.of(plan, (m for m in found if m is not None))
    figures: dict[str, Any] = {
        "elapsed_s": elapsed_s,
        "run_id": run_id,
        "pipeline": pipeline,
        "fingerprint": fingerprint,
        "outputs_uri": outputs_uri or store.outputs_uri(run_id),
        "max_failed_ratio": max_failed_ratio,
    }
    if aggregate is not None:
        result = aggregate.run_summary(**figures)
    else:  # the engine sums plain values
        result = summaries.run_summary(
            [plain(m) for m in store.manifest_records(run_id)], **figures
        )
    if repairs is not None:
        result["repairs"] = repairs
    result = judged(result, max_failed_ratio)
    store.write_run_manifest(run_id, result)
    if aggregate is not None:
        write_aggregate_record(store, run_id, aggregate, result)
    return result


def rewrite_repaired_run_manifest(
    store: RunStore, run_id: str, max_failed_ratio: float
) -> dict[str, Any]:
    """A repaired run's manifest: the sum of today's microbatch manifests, with the
    run store's repair records under ``repairs``; written and returned."""
    from airflow_provider_rayorch.runs.attempts import repair_records

    old = store.run_manifest_record(run_id)
    repairs = [
        r.model_dump(mode="json", include={"index", "attempt", "status", "job_id", "at", "message"})
        for r in repair_records(store, run_id)
    ]
    return write_run_manifest(
        store,
        run_id,
        elapsed_s=(old.elapsed_s if old is not None else None) or 0.0,
        pipeline=old.pipeline if old is not None else None,
        fingerprint=old.fingerprint if old is not None else None,
        max_failed_ratio=max_failed_ratio,
        outputs_uri=old.outputs.uri if old is not None and old.outputs is not None else None,
        repairs=repairs,
    )
