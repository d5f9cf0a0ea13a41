"""The report page: header, sections, tables and the source filter script."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _plots as plots
from ._svg import duration, esc, fmt, share

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ._data import RunView

__all__ = ["job_state_block", "render_page", "state_badge"]

CSS = """
body{font-family:system-ui,sans-serif;margin:0;padding:16px 24px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.meta{color:#555;font-size:13px}.meta code{font-size:12px}
.cards{display:flex;flex-wrap:wrap;gap:8px;margin:12px 0}
.card{border:1px solid #ddd;border-radius:6px;padding:6px 12px;min-width:90px}
.card b{display:block;font-size:18px}.card span{font-size:12px;color:#555}
.state{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;font-size:12px}
.state-success{background:#2e7d32}.state-failed{background:#c62828}
.state-running,.state-pending{background:#1565c0}.state-unknown{background:#607d8b}
.state-not_started{background:#6d4c41}.state-stopped{background:#455a64}
.state-not_run{background:#e0e0e0;color:#424242}
.job-state{font-size:13px;margin:6px 0;color:#333}.job-state:empty{display:none}
.job-state code{font-size:12px;background:#f5f5f5;padding:0 3px}
table{border-collapse:collapse;font-size:12px;margin:6px 0}
th,td{border:1px solid #e0e0e0;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#fafafa}td.num{text-align:right}tr:target,tr.focus{background:#fff3c4}
.o-failed{color:#c62828}.o-suppressed{color:#ef6c00}.o-dropped{color:#757575}
.o-present{color:#2e7d32}.note{color:#666;font-size:12px}
.swatch{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px}
.plots{display:flex;flex-wrap:wrap;gap:12px}svg.plot{max-width:100%;height:auto}
#source-filter{width:320px;padding:3px}
"""

SCRIPT = """
(function(){
  var q=document.getElementById('source-filter'),o=document.getElementById('outcome-filter');
  var n=document.getElementById('source-shown');
  var rows=Array.prototype.slice.call(document.querySelectorAll('#sources-table tbody tr'));
  function apply(){
    var s=q.value.toLowerCase(),oc=o.value,k=0;
    rows.forEach(function(r){
      var show=(!oc||r.getAttribute('data-outcome')===oc)&&
        (!s||r.textContent.toLowerCase().indexOf(s)>=0);
      r.hidden=!show;if(show){k++;}
    });
    n.textContent=k;
  }
  q.addEventListener('input',apply);o.addEventListener('change',apply);
  var h=location.hash||('#'+(document.body.getAttribute('data-focus')||''));
  var m=/^#mb-(\\d+)$/.exec(h);
  if(m){
    q.value='mb '+m[1]+' ';
    var row=document.getElementById('mb-'+m[1]);
    if(row){row.className='focus';row.scrollIntoView();}
  }
  apply();
})();
"""


def _card(value: object, label: str) -> str:
    return f'<div class="card"><b>{esc(value)}</b><span>{esc(label)}</span></div>'


def _state(state: str, element_id: str = "") -> str:
    ident = f' id="{element_id}"' if element_id else ""
    text = state.replace("_", " ")
    return f'<span class="state state-{esc(state)}"{ident}>{esc(text)}</span>'


def state_badge(state: str) -> str:
    """The run's state badge of the header (``id="run-state"``)."""
    return _state(state, "run-state")


def job_state_block(job_status: str | None, message: str | None) -> str:
    """The line under the header naming the Ray job's status and why (empty: nothing known)."""
    parts = []
    if job_status:
        parts.append(f"Ray job <code>{esc(job_status)}</code>")
    if message:
        parts.append(esc(message))
    return f'<div class="job-state" id="job-state">{" &middot; ".join(parts)}</div>'


def _header(view: RunView, generated_at: str) -> str:
    s = view.sources
    committed = sum(mb.committed for mb in view.microbatches)
    elapsed = "" if view.elapsed_s is None else _card(duration(view.elapsed_s), "elapsed")
    return (
        f"<header><h1>RayOrch run report {state_badge(view.state)}</h1>"
        f'<div class="meta">run <code id="run-id">{esc(view.run_id)}</code> &middot; pipeline '
        f"<code>{esc(view.pipeline)}</code> &middot; plan <code>{esc(view.fingerprint[:16])}</code>"
        f" &middot; generated {esc(generated_at)}</div>"
        f"{job_state_block(view.job_status, view.state_message)}"
        '<div class="cards" id="summary">'
        f"{_card(view.total_sources, 'sources')}"
        + "".join(_card(s.get(k, 0), k) for k in ("present", "dropped", "failed", "suppressed"))
        + _card(f"{committed}/{len(view.microbatches)}", "microbatches committed")
        + _card(view.grains.get("dispatched", 0), "grains dispatched")
        + _card(view.grains.get("retried", 0), "grains retried")
        + elapsed
        + "</div></header>"
    )


def _microbatch_table(view: RunView) -> str:
    rows = []
    for mb in view.microbatches:
        s = mb.sources
        last = mb.first_source + mb.count - 1
        cells = [f"{mb.first_source}-{last}", _state(mb.state)]
        cells += [str(s.get(k, "")) for k in ("present", "dropped", "failed", "suppressed")]
        cells += [str(mb.grains.get("dispatched", "")), str(mb.grains.get("retried", ""))]
        cells.append("" if mb.elapsed_s is None else duration(mb.elapsed_s))
        cells.append(str(mb.attempt) if mb.committed else "")
        tds = "".join(
            f'<td class="num">{c}</td>' if c[:1].isdigit() else f"<td>{c}</td>" for c in cells
        )
        rows.append(f'<tr id="mb-{mb.index}"><td>mb {mb.index}</td>{tds}</tr>')
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "microbatch",
            "sources",
            "state",
            "present",
            "dropped",
            "failed",
            "suppressed",
            "grains",
            "retried",
            "elapsed",
            "attempt",
        )
    )
    body = "".join(rows)
    return (
        f'<table id="microbatch-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    )


def _attempts_table(view: RunView) -> str:
    """The attempt history of the repaired microbatches (empty: none was repaired)."""
    rows = []
    for a in view.attempts:
        repaired = ", ".join(str(s) for s in a.repaired_sources)
        job = f"<code>{esc(a.job_id)}</code>" if a.job_id else ""
        rows.append(
            f'<tr class="attempt-{esc(a.kind)}"><td>mb {a.index}</td><td class="num">'
            f"{a.attempt}</td><td>{esc(a.kind)}</td><td>{_state(a.state)}</td>"
            f"<td>{esc(repaired)}</td><td>{esc(a.when)}</td><td>{job}</td>"
            f'<td class="cause">{esc(a.message)}</td></tr>'
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("microbatch", "attempt", "kind", "state", "sources repaired", "when", "Ray job")
    )
    return (
        f'<table id="attempts-table"><thead><tr>{head}<th>message</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _sources_table(view: RunView) -> str:
    multi = len(view.ports) > 1
    rows = []
    for r in view.rows:
        port = f"<td>{esc(r['port'])}</td>" if multi else ""
        rows.append(
            f'<tr data-outcome="{esc(r["outcome"])}"><td class="num">{r["source"]}</td>'
            f"<td>mb {r['microbatch']} </td>{port}"
            f'<td class="o-{esc(r["outcome"])}">{esc(r["outcome"])}</td>'
            f"<td>{esc(r['cause'])}</td><td>{esc(r['label'])}</td></tr>"
        )
    options = "".join(
        f'<option value="{o}">{o}</option>'
        for o in plots.OUTCOME_COLORS
        if o in ("present", "dropped", "failed", "suppressed")
    )
    shown = len(view.rows)
    capped = (
        f' <span class="note">(listing {shown} of {view.rows_total} rows: failures first)</span>'
        if view.rows_total > shown
        else ""
    )
    if not view.rows_total:
        capped = ' <span class="note">(no source committed yet)</span>'

    port_head = "<th>port</th>" if multi else ""
    return (
        '<div><input id="source-filter" type="search" placeholder="filter: source, cause, text">'
        f' <select id="outcome-filter"><option value="">all outcomes</option>{options}</select>'
        f' <span class="note"><span id="source-shown">{shown}</span> shown</span>{capped}</div>'
        f'<table id="sources-table"><thead><tr><th>source</th><th>microbatch</th>{port_head}'
        "<th>outcome</th><th>cause</th><th>source row</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _calls_table(calls: Sequence[Mapping[str, Any]], span: float) -> str:
    if not calls:
        return ""
    keys = (
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
    head = "".join(
        f"<th>{k.removesuffix('_s').replace('_', ' ')}</th>" for k in ("call", *keys, "utilization")
    )
    rows = []
    for c in calls:
        cells = "".join(
            f'<td class="num">{esc(_metric(k, float(c.get(k) or 0)))}</td>' for k in keys
        )
        util = float(c.get("busy_s") or 0.0) / (max(int(c.get("replicas") or 1), 1) * span)
        rows.append(
            f'<tr><td>{esc(c.get("name"))}</td>{cells}<td class="num">{share(util)}</td></tr>'
        )
    body = "".join(rows)
    return f'<table id="calls-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _metric(key: str, value: float) -> str:
    """A Call metric: durations with their unit (µs, ms, s), counts compact."""
    return duration(value) if key.endswith("_s") else fmt(value)


def _section(key: str, title: str, body: str, note: str = "") -> str:
    extra = f'<p class="note">{note}</p>' if note else ""
    return f'<section id="{key}"><h2>{esc(title)}</h2>{extra}{body}</section>'


def _microbatch_states(view: RunView) -> list[str]:
    """The legend's states: ``not run`` only when the job ended before some microbatches."""
    ended = any(mb.state == "not_run" for mb in view.microbatches)
    return ["success", "failed", "not run" if ended else "pending"]


def _no_timeline_note(view: RunView) -> str:
    if view.state == "not_started":
        return "No batches: the Ray job never started, so no actor ran."
    if not any(mb.committed for mb in view.microbatches):
        return (
            "No batches yet. This page was rendered from the run store alone; the driver's "
            "report, with each actor's timeline, replaces it once the driver writes one "
            "(after a commit, at most every 10 s, and when the run ends)."
        )
    return (
        "No batch timeline was recorded for this run: this page was rendered from the run "
        "store alone (plan, manifests, outputs)."
    )


def render_page(
    view: RunView,
    timeline: Sequence[Mapping[str, Any]],
    calls: Sequence[Mapping[str, Any]],
    generated_at: str,
) -> str:
    """The whole self-contained HTML document."""
    ends = [mb.finished_s for mb in view.microbatches]
    span = plots.span_of(timeline, *ends)
    no_timeline = _no_timeline_note(view)
    committed = any(mb.committed for mb in view.microbatches)
    times = (
        " Commit times are the manifests' modification times."
        if view.times_from_store and committed
        else ""
    )
    sections = [
        _section(
            "microbatches",
            "Source microbatches",
            plots.microbatch_spans(view.microbatches, span)
            + '<div class="note">'
            + plots.legend({k: plots.OUTCOME_COLORS[k] for k in _microbatch_states(view)})
            + "</div>"
            + _microbatch_table(view),
            times.strip(),
        ),
        _section(
            "completion",
            "Completion of sources",
            plots.completion_curve(view.microbatches, view.total_sources, span),
        ),
    ]
    if timeline:
        sections += [
            _section(
                "timeline",
                "Actors busy and idle",
                plots.busy_timeline(timeline, span)
                + '<div class="note">'
                + plots.legend({"in flight": plots.IN_FLIGHT, **plots.REPORT_COLORS})
                + "; blank: idle. Percentages: busy share of the run. Busy is the time "
                "inside the UDF's <code>run()</code>; the rest of a batch's time in flight is "
                "argument transfer, result storage and scheduling.</div>"
                + _calls_table(calls, span),
            ),
            _section("queue", "Ready-queue depth", plots.queue_depth(timeline, span)),
            _section(
                "batches",
                "Batch sizes",
                '<div class="plots">' + "".join(plots.batch_size_plots(calls, timeline)) + "</div>",
            ),
        ]
    else:
        sections.append(_section("timeline", "Actors busy and idle", "", no_timeline))
    if view.attempts:
        sections.append(
            _section(
                "attempts",
                "Repairs and attempts",
                _attempts_table(view),
                "Each repaired microbatch's attempts: the run's first, then each repair "
                "(its re-run sources, or why it was refused). The tables above show the "
                "committed attempt.",
            )
        )
    sections.append(_section("sources", "Sources", _sources_table(view)))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>RayOrch run {esc(view.run_id)}</title><style>{CSS}</style></head>"
        f'<body data-state="{esc(view.state)}">{_header(view, generated_at)}{"".join(sections)}'
        f"<script>{SCRIPT}</script></body></html>"
    )
