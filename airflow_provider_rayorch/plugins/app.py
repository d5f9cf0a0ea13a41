"""The FastAPI app the plugin mounts at ``/rayorch`` in Airflow's API server.

Every page requires a logged-in Airflow user (the UI's JWT cookie or a bearer
token) allowed to read the DAG's task instances. Run stores are found through
Airflow's metadata (see :mod:`.resolve`), never taken from the request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_dag
from airflow.utils.session import create_session
from fastapi import Depends, FastAPI, Query
from fastapi.responses import HTMLResponse

from . import pages, resolve

if TYPE_CHECKING:
    from airflow_provider_rayorch.reports import RunState

__all__ = ["app", "report_html"]

app = FastAPI(title="RayOrch run reports", docs_url=None, redoc_url=None, openapi_url=None)
_READ_TI = Depends(requires_access_dag("GET", DagAccessEntity.TASK_INSTANCE))


def report_html(ref: resolve.RunRef) -> str | None:
    """The stored report of a run showing the run's state as of now, else (none stored,
    or a repair came after it) one rendered now from the run store alone."""
    from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
    from airflow_provider_rayorch.reports import (
        read_run_report,
        read_run_state,
        render_run_report,
        report_outdated,
        restate_report,
    )

    store = RayOrchHook().run_store(ref.store_uri)  # with rayorch_default's run_store_options
    # a repair since the driver's report: render the repaired state from the store
    html = None if report_outdated(store, ref.run_id) else read_run_report(store, ref.run_id)
    if html is None:
        if store.read_plan(ref.run_id) is None:
            return None
        html = render_run_report(store, ref.run_id)
    else:  # written by the driver, maybe while running: the job may have ended since
        html = restate_report(html, read_run_state(store, ref.run_id))
    return pages.focus(html, ref.microbatch)


def _state(run: resolve.TaskRun) -> RunState:
    """The run's state for the lists (see ``reports.state`` for the rule)."""
    from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
    from airflow_provider_rayorch.reports import RunState, read_run_state

    try:
        return read_run_state(RayOrchHook().run_store(run.store_uri), run.rayorch_run_id)
    except Exception as exc:  # an unreachable store must not break the list
        return RunState("?", message=f"cannot read the run store: {type(exc).__name__}: {exc}")


def _map_index(value: str) -> int:
    try:
        return int(value)
    except ValueError:  # "{MAP_INDEX}" left unreplaced on an unmapped task instance
        return -1


@app.get("/ti", response_class=HTMLResponse, dependencies=[_READ_TI])
def task_instance_report(
    dag_id: str, run_id: str, task_id: str, map_index: Annotated[str, Query()] = "-1"
) -> HTMLResponse:
    """The report of the run a task instance started or watches."""
    with create_session() as session:
        ref = resolve.find_for_ti(session, dag_id, run_id, task_id, _map_index(map_index))
    html = None if ref is None else report_html(ref)
    if html is None:
        text = f"{task_id} in {dag_id} / {run_id} has no RayOrch run (yet)."
        return HTMLResponse(pages.message_page("No RayOrch report", text), status_code=404)
    return HTMLResponse(html)


@app.get("/dagrun", response_class=HTMLResponse, dependencies=[_READ_TI])
def dag_run_reports(dag_id: str, run_id: str) -> HTMLResponse:
    """The DAG run's report when it started one RayOrch run, else a list of them."""
    with create_session() as session:
        runs = resolve.find_for_dag_run(session, dag_id, run_id)
    if len(runs) == 1:
        run = runs[0]
        html = report_html(resolve.RunRef(run.store_uri, run.rayorch_run_id))
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
