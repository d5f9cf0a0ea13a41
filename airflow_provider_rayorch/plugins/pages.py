"""The plugin's pages, rendered through the reports' autoescaping templates: run lists,
"nothing here" notes and reports (the stylesheet linked, never inlined)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from airflow_provider_rayorch.reports.page import render_message, render_runs

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow_provider_rayorch.reports import RunState

    from .resolve import TaskRun

__all__ = ["STYLESHEET", "message_page", "runs_page", "ti_href"]

#: The plugin's stylesheet, relative to its pages (``/rayorch/ti``, ``/rayorch/``, ...).
STYLESHEET = "static/report.css"
#: How the state column is decided, in one sentence (the rule is runs.state_rule's).
STATE_NOTE = (
    "State: as the run's driver recorded it. Running while it runs (it writes at every "
    "commit and every few minutes); once it ended, the run manifest's verdict (success, "
    "failed), or failed with its cause, or stopped; not started when the Ray job never "
    "ran the driver; failed when the job ended without the driver recording it (killed); "
    "unknown when nothing was recorded for an hour."
)


def message_page(title: str, text: str) -> str:
    """A page with one explanatory paragraph."""
    return render_message(title, text, stylesheet=STYLESHEET)


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


def _state(state: RunState | str | None) -> tuple[str, str]:
    """The state's name and its details: the Ray job's status and why."""
    if state is None or isinstance(state, str):
        return state or "", ""
    job = f"Ray job {state.job_status}" if state.job_status else ""
    return state.state, " \u00b7 ".join(p for p in (job, state.message or "") if p)


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
    rows: list[dict[str, Any]] = []
    for r in runs:
        state, details = _state(states.get(r.rayorch_run_id))
        rows.append(
            {
                "dag_id": r.dag_id,
                "run_id": r.run_id,
                "task": r.task_id if r.map_index < 0 else f"{r.task_id} [{r.map_index}]",
                "href": ti_href(r, prefix),
                "rayorch_run_id": r.rayorch_run_id,
                "state": state,
                "details": details,
                "when": str(r.when or "")[:19],
            }
        )
    return render_runs(title, rows, STATE_NOTE, stylesheet=STYLESHEET)
