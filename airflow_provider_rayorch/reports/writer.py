"""Store a run's report data (``<run>/report.json``) and the kept ``report.html``, and
render a report from the store on request.

``report.json`` holds what only the driver knows (:mod:`.measure`); everything else
comes from the run store when a page is rendered, so a page always shows the run as
it is now. ``report.html`` is the same template rendered at write time, for users
who open the run store's files directly (it is never served by the plugin). Both are
read and written through the run store's byte I/O (atomic writes; a store that cannot
be written raises ``StoreError``); a report is rendered from the measurements in
memory, never from the file just written.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.runs import paths

from ._data import load_run
from ._live import live_view, stored_aggregate
from .measure import measure
from .model import ReportData, ReportDataError
from .page import SourceForm, render_report, report_page

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow_provider_rayorch.runs.aggregate import RunAggregate
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = [
    "DATA_NAME",
    "REPORT_NAME",
    "read_report_data",
    "read_run_report",
    "render_run_report",
    "report_uri",
    "write_run_report",
]

REPORT_NAME = paths.REPORT_FILE
DATA_NAME = paths.REPORT_DATA_FILE


def report_uri(store: RunStore, run_id: str) -> str:
    """Where the kept report of ``run_id`` lives (a path for local stores, else a URI)."""
    return store.record_uri(paths.report(run_id))  # before a query string


def read_report_data(store: RunStore, run_id: str) -> ReportData | None:
    """The driver's measurements of ``run_id``, None if it wrote none.

    :raises ReportDataError: the file does not parse (naming it and the fix).
    """
    parts = paths.report_data(run_id)
    raw = store.read_bytes(parts)
    return None if raw is None else ReportData.from_json(raw, store.record_uri(parts))


def _measured(
    store: RunStore,
    run_id: str,
    timeline: Sequence[Mapping[str, Any]],
    calls: Sequence[Mapping[str, Any]],
    microbatches: Sequence[Mapping[str, Any]] | None,
) -> tuple[ReportData | None, str | None]:
    """Report data: measured now when anything is given, else the stored one (and why
    there is none when it is damaged)."""
    if timeline or calls or microbatches is not None:
        return measure(run_id, timeline, calls, microbatches), None
    try:
        return read_report_data(store, run_id), None
    except ReportDataError as exc:
        return None, str(exc)


def render_run_report(
    store: RunStore,
    run_id: str,
    timeline: Sequence[Mapping[str, Any]] = (),
    calls: Sequence[Mapping[str, Any]] = (),
    *,
    microbatches: Sequence[Mapping[str, Any]] | None = None,
    generated_at: datetime | None = None,
    focus: int | None = None,
    form: SourceForm | None = None,
    stylesheet: str | None = None,
    kept: bool = False,
    live: RunAggregate | None = None,
) -> str:
    """The report's HTML: the run store as it is now, plus the driver's measurements
    (given here, else ``report.json`` when stored).

    :param timeline: ``Executor.timeline()`` / ``RunResult.timeline`` records.
    :param calls: ``RunResult.calls`` (per-Call metrics); may be empty.
    :param microbatches: per-microbatch timings ``{"index", "started_s", "finished_s"}``
        on the timeline's clock. Without them the manifests' modification times place
        the commits.
    :param focus: open on this microbatch (its row marked).
    :param form: the served page's sources filter (None: list every source).
    :param stylesheet: link this stylesheet (the plugin's) instead of inlining the CSS.
    :param kept: render the kept ``report.html``: it links the driver logs beside it
        (a served page gives their URIs instead).
    :param live: the driver's running aggregate: the run's counts and sampled source
        rows come from it instead of every manifest and output file (a live report
        reads the same few records whatever the number of committed microbatches).
        Without it, the run's aggregate record when it is current (a finished run),
        else every manifest.
    """
    data, damaged = _measured(store, run_id, timeline, calls, microbatches)
    timings = None
    if data is not None and data.timings is not None:
        timings = {t.index: t.model_dump() for t in data.timings}
    now = generated_at or datetime.now(UTC)
    if live is None:
        live = stored_aggregate(store, run_id)
    if live is not None:
        view = live_view(store, live, timings, now=now, focus=focus)
    else:
        view = load_run(store, run_id, timings, now=now, focus=focus)
    when = now.strftime("%Y-%m-%d %H:%M:%S UTC")
    page = report_page(view, data, when, focus=focus, form=form, kept=kept)
    if damaged:
        page.no_timeline_note = damaged
    return render_report(page, stylesheet=stylesheet)


def write_run_report(
    store: RunStore,
    run_id: str,
    timeline: Sequence[Mapping[str, Any]] = (),
    calls: Sequence[Mapping[str, Any]] = (),
    *,
    microbatches: Sequence[Mapping[str, Any]] | None = None,
    live: RunAggregate | None = None,
) -> str:
    """Store the driver's measurements (when given) as ``report.json`` and render the
    kept ``report.html`` from the store (``live``: from the driver's running aggregate,
    see :func:`render_run_report`); returns the kept report's URI. Without
    measurements (after a repair) the stored ones stay and the page is rendered again."""
    if timeline or calls or microbatches is not None:
        data = measure(run_id, timeline, calls, microbatches)
        store.write_bytes(paths.report_data(run_id), data.to_json().encode("utf-8"))
    # rendered from the measurements given (never from report.json just written)
    html = render_run_report(
        store, run_id, timeline, calls, microbatches=microbatches, kept=True, live=live
    )
    store.write_bytes(paths.report(run_id), html.encode("utf-8"))
    return report_uri(store, run_id)


def read_run_report(store: RunStore, run_id: str) -> str | None:
    """The kept report's HTML, or None when none was written."""
    raw = store.read_bytes(paths.report(run_id))
    return None if raw is None else raw.decode("utf-8")
