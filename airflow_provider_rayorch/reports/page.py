"""Pages rendered from data through autoescaping Jinja2 templates.

The report is the run as the store holds it now (:func:`._data.load_run`, with the
state rule of :mod:`.state`) plus the driver's measurements (``report.json``). The
plugin renders it on every request; the driver renders the same template into the
kept ``report.html``. No page carries a script or a style attribute: the plugin's
Content-Security-Policy forbids both, and every text is escaped.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

import jinja2

from airflow_provider_rayorch.runs.paths import DRIVER_LOGS

from . import _plots as plots
from ._svg import duration, fmt, share

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow_provider_rayorch.runs.history import AttemptRow

    from ._data import MicrobatchView, RunView
    from .model import Plot, ReportData

__all__ = ["ReportPage", "SourceForm", "css", "render_message", "render_report", "render_runs"]

#: At most this many microbatches are listed and drawn (the one a page opens on, failed
#: ones, then the newest committed): a report's size does not grow with the run.
MAX_MICROBATCH_ROWS = 500

_CALL_KEYS = (
    "replicas",
    "rpcs",
    "grains_dispatched",
    "mean_batch",
    "retries",
    "suppressed",
    "failed",
    "busy_s",
    "queue_wait_s",
)


@functools.cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("airflow_provider_rayorch.reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["f1"] = lambda value: f"{float(value):.1f}"
    return env


@functools.cache
def css() -> str:
    """The pages' stylesheet (served by the plugin, inlined into the kept report)."""
    return (resources.files(__package__) / "templates" / "report.css").read_text("utf-8")


def _render(template: str, stylesheet: str | None, **context: Any) -> str:
    return _env().get_template(template).render(stylesheet=stylesheet, css=css(), **context)


@dataclass(frozen=True)
class SourceForm:
    """The sources filter of a served page: a GET form (no script), its hidden fields
    (what locates the page), the text and the outcome to keep."""

    fields: Sequence[tuple[str, str]] = ()
    q: str = ""
    outcome: str = ""


@dataclass
class ReportPage:
    """Everything the report template shows, display-ready."""

    run_id: str
    pipeline: str
    fingerprint: str
    generated_at: str
    state: str
    job_status: str | None
    state_message: str | None
    cards: list[tuple[str, str]]
    microbatch_plot: Plot
    microbatch_legend: list[tuple[str, str]]
    microbatch_rows: list[dict[str, Any]]
    times_note: str
    #: says which microbatches are listed when not all are
    microbatches_note: str
    completion_plot: Plot
    no_timeline_note: str
    source_rows: list[Mapping[str, Any]]
    sources_note: str
    multi_port: bool
    attempt_rows: Sequence[AttemptRow]
    timeline: Plot | None = None
    timeline_legend: list[tuple[str, str]] = field(default_factory=list)
    call_head: list[str] = field(default_factory=list)
    call_rows: list[list[str]] = field(default_factory=list)
    queue: Plot | None = None
    batch_sizes: list[Plot] = field(default_factory=list)
    lost_actors: list[str] = field(default_factory=list)
    lost_nodes: list[str] = field(default_factory=list)
    focus: int | None = None
    form: SourceForm | None = None
    #: The run's driver logs: ``{"name", "href", "uri"}``; ``href`` is relative to the
    #: kept report (None on a served page, which gives the URI instead).
    driver_logs: list[dict[str, str | None]] = field(default_factory=list)
    #: a served page's link to every source row, page by page (the plugin's ``sources``)
    sources_href: str | None = None


def _driver_logs(view: RunView, *, kept: bool) -> list[dict[str, str | None]]:
    """The driver logs as the page shows them: linked from the kept ``report.html``,
    which lies beside the ``logs/`` folder; named with their URI on a served page."""
    return [
        {
            "name": name,
            "href": quote(f"{DRIVER_LOGS}/{name}", safe="/") if kept else None,
            "uri": uri,
        }
        for name, uri in view.driver_logs
    ]


def _no_timeline_note(view: RunView) -> str:
    if view.state == "not_started":
        return "No batches: the Ray job never started, so no actor ran."
    if not any(mb.committed for mb in view.microbatches):
        return (
            "No batches yet. This page was rendered from the run store alone; the driver's "
            "measurements, with each actor's timeline, join it once the driver writes them "
            "(after a commit, at most every 10 s, and when the run ends)."
        )
    return (
        "No batch timeline was recorded for this run: this page was rendered from the run "
        "store alone (plan, manifests, outputs)."
    )


def _cards(view: RunView) -> list[tuple[str, str]]:
    s = view.sources
    committed = sum(mb.done_count for mb in view.microbatches)
    total = sum(mb.size for mb in view.microbatches)
    cards = [(str(view.total_sources), "sources")]
    cards += [(str(s.get(k, 0)), k) for k in ("present", "dropped", "failed", "suppressed")]
    cards += [
        (f"{committed}/{total}", "microbatches committed"),
        (str(view.grains.get("dispatched", 0)), "grains dispatched"),
        (str(view.grains.get("retried", 0)), "grains retried"),
    ]
    if view.elapsed_s is not None:
        cards.append((duration(view.elapsed_s), "elapsed"))
    return cards


def _listed(view: RunView, focus: int | None) -> list[MicrobatchView]:
    """The microbatches the page lists: all, or :data:`MAX_MICROBATCH_ROWS` of them."""
    every = view.microbatches
    if len(every) <= MAX_MICROBATCH_ROWS:
        return list(every)
    order = [mb for mb in every if mb.index == focus]
    order += [mb for mb in every if mb.state == "failed"]
    order += [mb for mb in reversed(every) if mb.committed]
    keep = list(dict.fromkeys(mb.index for mb in [*order, *every]))[:MAX_MICROBATCH_ROWS]
    chosen = set(keep)
    return [mb for mb in every if mb.index in chosen]


def _microbatch_rows(listed: Sequence[MicrobatchView]) -> list[dict[str, Any]]:
    rows = []
    for mb in listed:
        s = mb.sources
        cells = [str(s.get(k, "")) for k in ("present", "dropped", "failed", "suppressed")]
        cells += [str(mb.grains.get("dispatched", "")), str(mb.grains.get("retried", ""))]
        cells.append("" if mb.elapsed_s is None else duration(mb.elapsed_s))
        cells.append(str(mb.attempt) if mb.committed else "")
        last = mb.first_source + mb.count - 1
        rows.append(
            {
                "index": mb.index,
                "name": mb.name,
                "range": f"{mb.first_source}-{last}",
                "state": mb.state,
                "cells": cells,
            }
        )
    return rows


def _calls(data: ReportData, span: float) -> tuple[list[str], list[list[str]]]:
    head = [k.removesuffix("_s").replace("_", " ") for k in ("call", *_CALL_KEYS, "utilization")]
    rows = []
    for c in data.calls:
        cells = [c.name]
        for key in _CALL_KEYS:
            value = float(getattr(c, key))
            cells.append(duration(value) if key.endswith("_s") else fmt(value))
        cells.append(share(c.busy_s / (max(c.replicas, 1) * span)))
        rows.append(cells)
    return head, rows


def _search_text(row: Mapping[str, Any], multi: bool) -> str:
    """What the text filter searches, as the row reads (``mb 3 `` matches mb 3 only)."""
    port = f"{row['port']} " if multi else ""
    return (
        f"{row['source']} mb {row['microbatch']} {port}{row['outcome']} {row['cause']} "
        f"{row['label']}"
    ).lower()


def _filter_rows(view: RunView, form: SourceForm | None, multi: bool) -> list[Mapping[str, Any]]:
    if form is None:
        return list(view.rows)
    q = form.q.lower()
    return [
        r
        for r in view.rows
        if (not form.outcome or r["outcome"] == form.outcome)
        and (not q or q in _search_text(r, multi))
    ]


def _sources_note(view: RunView) -> str:
    if not view.rows_total:
        return "no source committed yet"
    if view.rows_total > len(view.rows):
        return (
            f"listing {len(view.rows)} of {view.rows_total} rows, a sample: failures "
            "first, then the first sources of each microbatch"
        )
    return ""


def report_page(
    view: RunView,
    data: ReportData | None,
    generated_at: str,
    *,
    focus: int | None = None,
    form: SourceForm | None = None,
    kept: bool = False,
) -> ReportPage:
    """The template's data: the run as ``view`` holds it, and the driver's ``data``.
    ``kept``: the page is the kept ``report.html`` (it links files beside it)."""
    ends = [mb.finished_s for mb in view.microbatches]
    span = max([data.span_s if data is not None else 0.0, *[e for e in ends if e], 1e-3])
    ended = any(mb.state == "not_run" for mb in view.microbatches)
    states = ["success", "failed", "not run" if ended else "pending"]
    committed = any(mb.committed for mb in view.microbatches)
    multi = len(view.ports) > 1
    listed = _listed(view, focus)
    page = ReportPage(
        run_id=view.run_id,
        pipeline=view.pipeline,
        fingerprint=view.fingerprint[:16],
        generated_at=generated_at,
        state=view.state,
        job_status=view.job_status,
        state_message=view.state_message,
        cards=_cards(view),
        microbatch_plot=plots.microbatch_spans(listed, span),
        microbatch_legend=plots.legend({k: plots.OUTCOME_COLORS[k] for k in states}),
        microbatch_rows=_microbatch_rows(listed),
        microbatches_note=""
        if len(listed) == len(view.microbatches)
        else f"listing {len(listed)} of {len(view.microbatches)} microbatches: the failed "
        "ones, then the newest committed (the counts above are the run's)",
        times_note="Commit times are the manifests' modification times."
        if view.times_from_store and committed
        else "",
        completion_plot=plots.completion_curve(view.microbatches, view.total_sources, span),
        no_timeline_note=_no_timeline_note(view),
        source_rows=_filter_rows(view, form, multi),
        sources_note=_sources_note(view),
        multi_port=multi,
        attempt_rows=view.attempts,
        focus=focus,
        form=form,
        driver_logs=_driver_logs(view, kept=kept),
        sources_href=None if form is None else f"sources?{urlencode(form.fields)}&page=0",
    )
    if data is not None and data.timeline is not None:
        page.timeline, page.queue, page.batch_sizes = data.timeline, data.queue, data.batch_sizes
        page.timeline_legend = plots.legend({"in flight": plots.IN_FLIGHT, **plots.REPORT_COLORS})
        page.lost_actors = data.lost_actors
        page.lost_nodes = data.lost_nodes
        if data.calls:
            page.call_head, page.call_rows = _calls(data, span)
    return page


def render_report(page: ReportPage, *, stylesheet: str | None = None) -> str:
    """The report's HTML; ``stylesheet``: link it (the plugin), else inline the CSS."""
    return _render("report.html.j2", stylesheet, title=f"RayOrch run {page.run_id}", r=page)


def render_runs(
    title: str, rows: Sequence[Mapping[str, Any]], note: str, *, stylesheet: str | None = None
) -> str:
    """A table of runs: each row's ``dag_id``, ``run_id``, ``task``, ``href``,
    ``rayorch_run_id``, ``state``, ``details`` and ``when``."""
    return _render("runs.html.j2", stylesheet, title=title, rows=rows, note=note)


def render_message(title: str, text: str, *, stylesheet: str | None = None) -> str:
    """A page with one explanatory paragraph."""
    return _render("message.html.j2", stylesheet, title=title, text=text)
