"""Find the RayOrch run of a task instance (or DAG run) in Airflow's metadata DB.

A task instance names its run through XCom: ``rayorch_run_id`` and
``rayorch_run_store`` (RayOrchOperator, the submit task), or a lineage summary
(return value or ``rayorch_summary``: microbatch and run sensors), whose
``outputs.uri`` locates the store; a sensor still waiting has them in its
rendered template fields. The store URI never comes from the browser.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.common.states import (
    CONN_ID_KEY,
    RUN_ID_KEY,
    RUN_STORE_KEY,
    SUMMARY_KEY,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from sqlalchemy.orm import Session

__all__ = [
    "RunRef",
    "find_for_dag_run",
    "find_for_ti",
    "recent_runs",
    "ref_from_values",
]

#: the XCom keys are common.states' (CONN_ID_KEY names the connection whose
#: ``run_store_options`` open the store, pushed with the run id)
_SUMMARY_KEYS = ("return_value", SUMMARY_KEY)


@dataclass(frozen=True)
class RunRef:
    """Where one RayOrch run lives, and the microbatch a task instance stands for."""

    store_uri: str
    run_id: str
    microbatch: int | None = None
    #: the connection that wrote the run (None: not known, ``rayorch_default``'s options)
    conn_id: str | None = None


def _loads(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(value)
        except (ValueError, SyntaxError):
            continue
    return value


def _store_of_summary(summary: Mapping[str, Any]) -> str | None:
    from airflow_provider_rayorch.runs.uris import store_root_of  # the query string kept

    uri = str((summary.get("outputs") or {}).get("uri") or "")
    return store_root_of(uri, str(summary.get("run_id")))


def ref_from_values(values: Mapping[str, Any]) -> RunRef | None:
    """A run reference from a task instance's XComs or rendered fields, if any."""
    run_id, store = values.get(RUN_ID_KEY) or values.get("run_id"), values.get(RUN_STORE_KEY)
    store = store or values.get("run_store")
    conn_id = str(values[CONN_ID_KEY]) if values.get(CONN_ID_KEY) else None
    microbatch = _loads(values.get("microbatch"))
    index = (
        int(microbatch["index"]) if isinstance(microbatch, dict) and "index" in microbatch else None
    )
    for key in _SUMMARY_KEYS:
        summary = _loads(values.get(key))
        if isinstance(summary, dict) and summary.get("run_id") and summary.get("outputs"):
            found = _store_of_summary(summary)
            if found:
                mb = summary.get("microbatch") or {}
                index = int(mb["index"]) if isinstance(mb, dict) and "index" in mb else index
                return RunRef(found, str(summary["run_id"]), index, conn_id)
    if run_id and store and "{{" not in str(run_id) + str(store):
        return RunRef(str(store), str(run_id), index, conn_id)
    return None


def _xcoms(session: Session, where: Iterable[Any]) -> list[Any]:
    from airflow.models.xcom import XComModel
    from sqlalchemy import select

    return list(session.scalars(select(XComModel).where(*where)))


def find_for_ti(
    session: Session, dag_id: str, run_id: str, task_id: str, map_index: int
) -> RunRef | None:
    """The run of one task instance: its XComs first, then its rendered fields."""
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
    from airflow.models.xcom import XComModel
    from sqlalchemy import select

    ti = (
        XComModel.dag_id == dag_id,
        XComModel.run_id == run_id,
        XComModel.task_id == task_id,
        XComModel.map_index == map_index,
        XComModel.key.in_((RUN_ID_KEY, RUN_STORE_KEY, CONN_ID_KEY, *_SUMMARY_KEYS)),
    )
    values = {x.key: XComModel.deserialize_value(x) for x in _xcoms(session, ti)}
    ref = ref_from_values(values)
    if ref is not None:
        return _with_conn(session, dag_id, run_id, ref)
    rtif = session.scalar(
        select(RenderedTaskInstanceFields).where(
            RenderedTaskInstanceFields.dag_id == dag_id,
            RenderedTaskInstanceFields.run_id == run_id,
            RenderedTaskInstanceFields.task_id == task_id,
            RenderedTaskInstanceFields.map_index == map_index,
        )
    )
    fields = getattr(rtif, "rendered_fields", None)
    ref = ref_from_values(fields) if isinstance(fields, dict) else None
    return None if ref is None else _with_conn(session, dag_id, run_id, ref)


def _with_conn(session: Session, dag_id: str, run_id: str, ref: RunRef) -> RunRef:
    """``ref`` with the connection of the task that started its run in this DAG run
    (a sensor's XComs name the run, not the connection): two queries in all."""
    from dataclasses import replace

    from airflow.models.xcom import XComModel

    if ref.conn_id is not None:
        return ref
    where = (XComModel.dag_id == dag_id, XComModel.run_id == run_id)
    starters = [
        x
        for x in _xcoms(session, (*where, XComModel.key == RUN_ID_KEY))
        if str(XComModel.deserialize_value(x)) == ref.run_id
    ]
    conns = _values_of(session, starters, (CONN_ID_KEY,))
    for x in starters:
        conn = conns.get((*_ti(x), CONN_ID_KEY))
        if conn is not None:
            return replace(ref, conn_id=str(conn))
    return ref


def _ti(x: Any) -> tuple[str, str, str, int]:
    """The task instance an XCom belongs to."""
    return (str(x.dag_id), str(x.run_id), str(x.task_id), int(x.map_index))


def _values_of(
    session: Session, xcoms: Sequence[Any], keys: Sequence[str]
) -> dict[tuple[str, str, str, int, str], Any]:
    """``{(dag_id, run_id, task_id, map_index, key): value}`` of the ``keys`` XComs of
    the task instances ``xcoms`` belong to, in one query (the first of each kept)."""
    from airflow.models.xcom import XComModel
    from sqlalchemy import tuple_

    tis = sorted({_ti(x) for x in xcoms})
    if not tis:
        return {}
    columns = (XComModel.dag_id, XComModel.run_id, XComModel.task_id, XComModel.map_index)
    found: dict[tuple[str, str, str, int, str], Any] = {}
    for x in _xcoms(session, (tuple_(*columns).in_(tis), XComModel.key.in_(tuple(keys)))):
        found.setdefault((*_ti(x), str(x.key)), XComModel.deserialize_value(x))
    return found


@dataclass(frozen=True)
class TaskRun:
    """A task instance that started a RayOrch run."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    rayorch_run_id: str
    store_uri: str
    when: Any = None
    #: the connection whose run_store_options open ``store_uri`` (None: rayorch_default's)
    conn_id: str | None = None


def _task_runs(session: Session, where: Iterable[Any], limit: int) -> list[TaskRun]:
    """The newest ``limit`` runs started by task instances matching ``where``: two
    queries, whatever their number."""
    from airflow.models.xcom import XComModel
    from sqlalchemy import select

    rows = session.scalars(
        select(XComModel)
        .where(XComModel.key == RUN_ID_KEY, *where)
        .order_by(XComModel.timestamp.desc())
        .limit(limit)
    )
    xcoms = list(rows)
    values = _values_of(session, xcoms, (RUN_STORE_KEY, CONN_ID_KEY))
    out = []
    for x in xcoms:
        store = values.get((*_ti(x), RUN_STORE_KEY))
        if store is None:
            continue
        conn = values.get((*_ti(x), CONN_ID_KEY))
        out.append(
            TaskRun(
                x.dag_id,
                x.run_id,
                x.task_id,
                x.map_index,
                str(XComModel.deserialize_value(x)),
                str(store),
                x.timestamp,
                None if conn is None else str(conn),
            )
        )
    return out


def find_for_dag_run(session: Session, dag_id: str, run_id: str) -> list[TaskRun]:
    """Every RayOrch run started by a task of one DAG run."""
    from airflow.models.xcom import XComModel

    return _task_runs(session, (XComModel.dag_id == dag_id, XComModel.run_id == run_id), 100)


def recent_runs(session: Session, dag_ids: set[str] | None, limit: int = 200) -> list[TaskRun]:
    """The most recent RayOrch runs, of the given DAGs only when ``dag_ids`` is set."""
    from airflow.models.xcom import XComModel

    where = () if dag_ids is None else (XComModel.dag_id.in_(sorted(dag_ids)),)
    return _task_runs(session, where, limit)
