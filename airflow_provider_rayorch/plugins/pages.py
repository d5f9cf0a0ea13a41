"""Small HTML pages of the plugin: run lists and "nothing here" notes."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING
from urllib.parse import urlencode

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow_provider_rayorch.reports import RunState

    from .resolve import TaskRun

__all__ = ["focus", "message_page", "runs_page"]

_CSS = (
    "body{font-family:system-ui,sans-serif;margin:16px 24px;color:#222}"
    "table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ddd;padding:4px 8px;"
    "text-align:left}th{background:#fafafa}.note{color:#666}td.details{max-width:560px}"
    "td.state-success{color:#2e7d32}td.state-failed{color:#c62828}"
    "td.state-not_started,td.state-stopped,td.state-unknown{color:#6d4c41}"
)
#: How the state column is decided, in one sentence (the rule is reports.state's).
STATE_NOTE = (
    "State: the run manifest's (success, failed) once the run ended; not started, failed or "
    "stopped when the Ray job ended without one; running while the run shows progress or "
    "its job reports it running; unknown when nothing was heard of it for an hour."
)


def _doc(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}'
        f"</title><style>{_CSS}</style></head><body>{body}</body></html>"
    )


def message_page(title: str, text: str) -> str:
    """A page with one explanatory paragraph."""
    return _doc(title, f'<h1>{escape(title)}</h1><p class="note" id="message">{escape(text)}</p>')


def ti_href(run: TaskRun, prefix: str = "") -> str:
    query = urlencode(
        {
            "dag_id": run.dag_id,
            "run_id": run.run_id,
            "task_id": run.task_id,
            "map_index": run.map_index,
        }
    )
    return f"{prefix}ti?{query}"


def _state_cells(state: RunState | str | None) -> str:
    """The state (words, coloured) and its details: the Ray job's status and why."""
    if state is None or isinstance(state, str):
        name, details = state or "", ""
    else:
        name = state.state
        job = f"Ray job {state.job_status}" if state.job_status else ""
        details = " \u00b7 ".join(p for p in (job, state.message or "") if p)
    return (
        f'<td class="state state-{escape(name)}">{escape(name.replace("_", " "))}</td>'
        f'<td class="details">{escape(details)}</td>'
    )


def runs_page(
    title: str,
    runs: Sequence[TaskRun],
    prefix: str = "",
    states: Mapping[str, RunState | str] | None = None,
) -> str:
    """A table of RayOrch runs, each linking to its report, with its state (by run id)."""
    if not runs:
        return message_page(title, "No RayOrch run was found.")
    states = states or {}
    rows = "".join(
        f"<tr><td>{escape(r.dag_id)}</td><td>{escape(r.run_id)}</td><td>{escape(r.task_id)}"
        f"{'' if r.map_index < 0 else f' [{r.map_index}]'}</td>"
        f'<td><a class="report-link" href="{escape(ti_href(r, prefix))}">'
        f"{escape(r.rayorch_run_id)}</a></td>"
        f"{_state_cells(states.get(r.rayorch_run_id))}"
        f"<td>{escape(str(r.when or ''))[:19]}</td></tr>"
        for r in runs
    )
    return _doc(
        title,
        f'<h1>{escape(title)}</h1><table id="runs"><thead><tr><th>DAG</th><th>DAG run</th>'
        "<th>task</th><th>RayOrch run (report)</th><th>state</th><th>details</th>"
        f"<th>submitted</th></tr></thead><tbody>{rows}</tbody></table>"
        f'<p class="note">{escape(STATE_NOTE)}</p>',
    )


def focus(html: str, microbatch: int | None) -> str:
    """Make a report open on one microbatch (its row highlighted, its sources listed)."""
    if microbatch is None:
        return html
    return html.replace("<body ", f'<body data-focus="mb-{int(microbatch)}" ', 1)
