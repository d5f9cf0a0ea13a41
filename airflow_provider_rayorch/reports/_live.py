"""A report's view of a run from an aggregate of its commits
(:class:`~airflow_provider_rayorch.runs.aggregate.RunAggregate`): the driver's running
one (a live report), or the one the run manifest's aggregate record keeps
(:func:`stored_aggregate`: a report rendered from the store). The plan, counts,
timings and sampled source rows are in memory, so a report reads only the few
records that do not grow with the run (run manifest head, run-state record, repair
records, the driver logs' names, the listings of the few microbatches it labels),
whatever the number of committed microbatches.
"""

from __future__ import annotations

from datetime import datetime  # noqa: TC003 (documented signature)
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs.aggregate_record import read_aggregate_record, restored_aggregate
from airflow_provider_rayorch.runs.attempts import repair_records
from airflow_provider_rayorch.runs.driver_log import driver_log_names, driver_log_uri
from airflow_provider_rayorch.runs.history import attempt_rows
from airflow_provider_rayorch.runs.records import Attempt, microbatch_count
from airflow_provider_rayorch.runs.run_state import read_run_state, run_manifest_head

from ._data import MicrobatchView, RunView, _output_rows, _times, apply_state, label_rows

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_rayorch.runs.aggregate import RunAggregate
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["live_view", "stored_aggregate"]


def stored_aggregate(store: RunStore, run_id: str) -> RunAggregate | None:
    """The aggregate the run's aggregate record keeps while it is current, None
    without a plan or a current record (or with a damaged one: the report then reads
    the manifests)."""
    try:
        record = read_aggregate_record(store, run_id)
    except StoreError:
        return None
    plan = None if record is None else store.read_plan(run_id)
    return None if record is None or plan is None else restored_aggregate(plan, record)


def live_view(
    store: RunStore,
    agg: RunAggregate,
    timings: Mapping[int, Mapping[str, Any]] | None,
    *,
    now: datetime | None = None,
    focus: int | None = None,
) -> RunView:
    """The run as ``agg`` holds it, its state as of ``now`` (see :mod:`.state`);
    ``focus``: every source row of that committed microbatch is listed too."""
    plan, run_id = agg.plan, agg.plan.run_id
    view = RunView(run_id=run_id, pipeline=plan.pipeline, fingerprint=plan.fingerprint)
    view.total_sources = plan.total_sources
    view.ports = list(agg.ports) or ["out"]
    view.microbatches = _rows_of(agg)
    _times(store, run_id, view.microbatches, timings or {})
    view.sources, view.grains = dict(agg.totals), dict(agg.grains)
    run = run_manifest_head(store, run_id)
    if run is not None:
        view.elapsed_s = run.elapsed_s or 0.0
    histories = {
        i: [Attempt.model_validate(a) for a in history] for i, (_, history) in agg.attempts.items()
    }
    apply_state(view, read_run_state(store, run_id, now=now))
    view.attempts = attempt_rows(histories, repair_records(store, run_id))
    view.driver_logs = [
        (name, driver_log_uri(store, run_id, name)) for name in driver_log_names(store, run_id)
    ]
    rows = agg.report_rows()
    focused = None if focus is None else _focus_rows(store, run_id, focus, view.ports)
    if focused is not None:
        rows = [r for r in rows if r["microbatch"] != focus] + focused
    view.rows = sorted(
        ({**r, "label": ""} for r in rows), key=lambda r: (int(r["source"]), str(r["port"]))
    )
    label_rows(store, plan, view.rows, focus)
    view.rows_total = agg.rows_total
    return view


def _focus_rows(
    store: RunStore, run_id: str, index: int, ports: list[str]
) -> list[dict[str, Any]] | None:
    """Every source row of committed microbatch ``index`` (its committed attempt's
    files), None when it is not committed."""
    manifest = store.manifest_record(run_id, index)
    if manifest is None or manifest.microbatch is None:
        return None
    mb = MicrobatchView(
        index, manifest.microbatch.first_source, manifest.microbatch.count, "success"
    )
    mb.files = dict(manifest.files or {})
    return [
        {
            "source": int(row["source"]),
            "outcome": str(row["outcome"]),
            "cause": row["cause"] or "",
            "microbatch": index,
            "port": port,
        }
        for port in ports
        for row in _output_rows(store, run_id, mb, port)
    ]


def _rows_of(agg: RunAggregate) -> list[MicrobatchView]:
    """One row per bin of the plan's microbatches (one microbatch each, up to
    :data:`~airflow_provider_rayorch.runs.aggregate.MAX_BINS` of them): a row of
    several is ``running`` while only some of them are committed."""
    plan, width = agg.plan, agg.width
    total = microbatch_count(plan.total_sources, plan.batch_size)
    views = []
    for number in range(-(-total // width)):
        first, last = number * width, min((number + 1) * width, total) - 1
        start = plan.microbatch(first)[0]
        end = sum(plan.microbatch(last))
        mb = MicrobatchView(first, start, end - start, "pending")
        if width > 1:
            mb.last, mb.done = last, 0
        done = agg.bins.get(number)
        if done is not None and done.committed:
            mb.state = done.state if done.failed or done.committed > last - first else "running"
            mb.attempt, mb.elapsed_s = done.attempt, done.max_elapsed_s
            mb.sources, mb.grains = dict(done.sources), dict(done.grains)
            mb.done = done.committed if width > 1 else None
        views.append(mb)
    return views
