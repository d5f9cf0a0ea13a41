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

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from sqlalchemy.orm import Session

__all__ = [
    "RUN_ID_KEY",
    "RUN_STORE_KEY",
    "RunRef",
    "find_for_dag_run",
    "find_for_ti",
    "recent_runs",
    "ref_from_values",
]

RUN_ID_KEY = "rayorch_run_id"
RUN_STORE_KEY = "rayorch_run_store"
_SUMMARY_KEYS = ("return_value", "rayorch_summary")


@dataclass(frozen=True)
class RunRef:
    """Where one RayOrch run lives, and the microbatch a task instance stands for."""

    store_uri: str
    run_id: str
    microbatch: int | None = None


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
                return RunRef(found, str(summary["run_id"]), index)
    if run_id and store and "{{" not in str(run_id) + str(store):
        return RunRef(str(store), str(run_id), index)
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
        XComModel.key.in_((RUN_ID_KEY, RUN_STORE_KEY, *_SUMMARY_KEYS)),
    )
    values = {x.key: XComModel.deserialize_value(x) for x in _xcoms(session, ti)}
    ref = ref_from_values(values)
    if ref is not None:
        return ref
    rtif = session.scalar(
        select(RenderedTaskInstanceFields).where(
            RenderedTaskInstanceFields.dag_id == dag_id,
            RenderedTaskInstanceFields.run_id == run_id,
            RenderedTaskInstanceFields.task_id == task_id,
            RenderedTaskInstanceFields.map_index == map_index,
        )
    )
    fields = getattr(rtif, "rendered_fields", None)
    return ref_from_values(fields) if isinstance(fields, dict) else None


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


def _task_runs(session: Session, where: Iterable[Any], limit: int) -> list[TaskRun]:
    from airflow.models.xcom import XComModel
    from sqlalchemy import select

    rows = session.scalars(
        select(XComModel)
        .where(XComModel.key == RUN_ID_KEY, *where)
        .order_by(XComModel.timestamp.desc())
        .limit(limit)
    )
    out = []
    for x in rows:
        stores = _xcoms(
            session,
            (
                XComModel.dag_id == x.dag_id,
                XComModel.run_id == x.run_id,
                XComModel.task_id == x.task_id,
                XComModel.map_index == x.map_index,
                XComModel.key == RUN_STORE_KEY,
            ),
        )
        if not stores:
            continue
        out.append(
            TaskRun(
                x.dag_id,
                x.run_id,
                x.task_id,
                x.map_index,
                str(XComModel.deserialize_value(x)),
                str(XComModel.deserialize_value(stores[0])),
                x.timestamp,
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
