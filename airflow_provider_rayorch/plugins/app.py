"""The FastAPI app the plugin mounts at ``/rayorch`` in Airflow's API server.

Every page requires a logged-in Airflow user (the UI's JWT cookie or a bearer
token) allowed to read the DAG's task instances. Run stores are found through
Airflow's metadata (see :mod:`.resolve`), never taken from the request. Pages are
rendered on each request from the run store's records through autoescaping
templates (:mod:`airflow_provider_rayorch.reports.page`); no stored HTML is ever
served. Every response carries :data:`SECURITY_HEADERS`: no script runs in these
pages, whatever a run store holds.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlencode

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_dag
from airflow.utils.session import create_session
from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from airflow_provider_rayorch.rayorch.errors import StoreError

from . import pages, resolve

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from airflow_provider_rayorch.reports import RunState, SourceForm

__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "app", "report_html"]

log = logging.getLogger(__name__)

#: No script at all (``default-src 'none'``), styles from the plugin's stylesheet only
#: (no inline style), forms submit to the plugin, framed by Airflow's UI only.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'self'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
_OUTCOMES = ("present", "dropped", "failed", "suppressed")

app = FastAPI(title="RayOrch run reports", docs_url=None, redoc_url=None, openapi_url=None)
_READ_TI = Depends(requires_access_dag("GET", DagAccessEntity.TASK_INSTANCE))


@app.middleware("http")
async def _security_headers(
    request: Request, call_next: Callable[[Request], Awaitable[Response]]
) -> Response:
    """Every response, refusals and crashes included, forbids script and sniffing."""
    try:
        response = await call_next(request)
    except Exception:
        log.exception("RayOrch plugin: %s %s failed", request.method, request.url.path)
        response = PlainTextResponse(
            "The RayOrch plugin failed on this request; the API server's log says why.",
            status_code=500,
        )
    response.headers.update(SECURITY_HEADERS)
    return response


def _form(fields: dict[str, str], q: str | None, outcome: str, default_q: str = "") -> SourceForm:
    from airflow_provider_rayorch.reports import SourceForm

    return SourceForm(
        fields=tuple(fields.items()),
        q=default_q if q is None else q,
        outcome=outcome if outcome in _OUTCOMES else "",
    )


def report_html(ref: resolve.RunRef, form: SourceForm | None = None) -> str | None:
    """The run's report rendered now from its run store (and the driver's measurements),
    None when the store knows nothing of the run; a page naming a damaged record."""
    from airflow_provider_rayorch.hooks.rayorch import open_run_store
    from airflow_provider_rayorch.reports import render_run_report

    store = open_run_store(ref.store_uri, ref.conn_id)  # with its connection's options
    try:
        if store.read_plan(ref.run_id) is None and not store.committed(ref.run_id):
            return None
        return render_run_report(
            store, ref.run_id, focus=ref.microbatch, form=form, stylesheet=pages.STYLESHEET
        )
    except StoreError as exc:  # a damaged record: say which, and what to do
        return pages.message_page("RayOrch report unreadable", str(exc))


def _state(run: resolve.TaskRun) -> RunState:
    """The run's state for the lists (``runs.run_state.read_run_state``)."""
    from airflow_provider_rayorch.hooks.rayorch import open_run_store
    from airflow_provider_rayorch.reports import RunState, read_run_state

    try:
        return read_run_state(open_run_store(run.store_uri, run.conn_id), run.rayorch_run_id)
    except Exception as exc:  # an unreachable store must not break the list
        return RunState("?", message=f"cannot read the run store: {type(exc).__name__}: {exc}")


@app.get("/ti", response_class=HTMLResponse, dependencies=[_READ_TI])
def task_instance_report(
    dag_id: str,
    run_id: str,
    task_id: str,
    map_index: Annotated[str, Query()] = "-1",
    q: str | None = None,
    outcome: str = "",
) -> Response:
    """The report of the run a task instance started or watches; a microbatch task's
    report opens on its microbatch (its sources listed, until the filter changes).

    Airflow's UI fills the tab's ``{MAP_INDEX}`` only for a mapped task instance: any
    other ``map_index`` is sent on to the task's own address (``map_index=-1``)."""
    try:
        index = int(map_index)
    except ValueError:
        from airflow_provider_rayorch.links.report import report_query

        kept = {k: v for k, v in (("q", q), ("outcome", outcome)) if v}
        return RedirectResponse(f"ti?{report_query(dag_id, run_id, task_id, -1, **kept)}")
    with create_session() as session:
        ref = resolve.find_for_ti(session, dag_id, run_id, task_id, index)
    html = None
    if ref is not None:
        fields = {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": map_index}
        focus = "" if ref.microbatch is None else f"mb {ref.microbatch} "
        html = report_html(ref, _form(fields, q, outcome, focus))
    if html is None:
        text = f"{task_id} in {dag_id} / {run_id} has no RayOrch run (yet)."
        return HTMLResponse(pages.message_page("No RayOrch report", text), status_code=404)
    return HTMLResponse(html)


@app.get("/sources", response_class=HTMLResponse, dependencies=[_READ_TI])
def source_pages(
    dag_id: str,
    run_id: str,
    task_id: str | None = None,
    map_index: Annotated[str, Query()] = "-1",
    page: int = 0,
) -> HTMLResponse:
    """Every source row of the run a task instance (or a DAG run with one run) started,
    ``page`` by page: a page reads the microbatches holding its sources only."""
    from airflow_provider_rayorch.hooks.rayorch import open_run_store
    from airflow_provider_rayorch.reports.sources_page import read_source_page, render_source_page

    fields = {"dag_id": dag_id, "run_id": run_id}
    ref: resolve.RunRef | None = None
    with create_session() as session:
        if task_id is None:
            runs = resolve.find_for_dag_run(session, dag_id, run_id)
            if len(runs) == 1:
                ref = resolve.RunRef(
                    runs[0].store_uri, runs[0].rayorch_run_id, None, runs[0].conn_id
                )
        elif map_index.lstrip("-").isdigit():
            fields.update(task_id=task_id, map_index=map_index)
            ref = resolve.find_for_ti(session, dag_id, run_id, task_id, int(map_index))
    if ref is None:
        text = f"{task_id or 'this DAG run'} in {dag_id} / {run_id} has no RayOrch run (yet)."
        return HTMLResponse(pages.message_page("No RayOrch run", text), status_code=404)
    store = open_run_store(ref.store_uri, ref.conn_id)
    query = urlencode(fields)
    try:
        found = read_source_page(store, ref.run_id, page)
    except StoreError as exc:  # a damaged record: say which, and what to do
        return HTMLResponse(pages.message_page("RayOrch sources unreadable", str(exc)))
    back = f"{'ti' if task_id is not None else 'dagrun'}?{query}"
    return HTMLResponse(
        render_source_page(found, query, report_href=back, stylesheet=pages.STYLESHEET)
    )


@app.get("/dagrun", response_class=HTMLResponse, dependencies=[_READ_TI])
def dag_run_reports(
    dag_id: str, run_id: str, q: str | None = None, outcome: str = ""
) -> HTMLResponse:
    """The DAG run's report when it started one RayOrch run, else a list of them."""
    with create_session() as session:
        runs = resolve.find_for_dag_run(session, dag_id, run_id)
    if len(runs) == 1:
        run = runs[0]
        form = _form({"dag_id": dag_id, "run_id": run_id}, q, outcome)
        ref = resolve.RunRef(run.store_uri, run.rayorch_run_id, conn_id=run.conn_id)
        html = report_html(ref, form)
        if html is not None:
            return HTMLResponse(html)
    title = f"RayOrch runs of {dag_id} / {run_id}"
    return HTMLResponse(
        pages.runs_page(title, runs, states={r.rayorch_run_id: _state(r) for r in runs})
    )


@app.get("/", response_class=HTMLResponse)
def recent(user: GetUserDep) -> HTMLResponse:
    """The most recent RayOrch runs of the DAGs the user may read."""
    from airflow.api_fastapi.app import get_auth_manager

    dag_ids: set[str] | None = get_auth_manager().get_authorized_dag_ids(user=user)
    with create_session() as session:
        runs = resolve.recent_runs(session, dag_ids)
    states = {r.rayorch_run_id: _state(r) for r in runs[:50]}
    return HTMLResponse(pages.runs_page("RayOrch runs", runs, states=states))


@app.get("/static/report.css")
def stylesheet() -> Response:
    """The pages' stylesheet (public: it holds nothing about any run)."""
    from airflow_provider_rayorch.reports.page import css

    return Response(css(), media_type="text/css")
