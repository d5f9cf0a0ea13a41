"""The plugin finds runs in Airflow's metadata with a bounded number of queries, however
many task instances started runs (an in-memory SQLite database, statements counted)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def engine() -> Any:
    import airflow.models
    from sqlalchemy import create_engine

    airflow.models.import_all_models()
    from airflow.models.xcom import XComModel

    db = create_engine("sqlite://")
    XComModel.metadata.create_all(db)
    return db


def _session(engine: Any, runs: int) -> Any:
    """A session over the XComs of ``runs`` task instances of DAG run ``d``/``r``, each
    naming its RayOrch run, store and connection, and a microbatch sensor naming run 0."""
    from airflow.models.xcom import XComModel
    from sqlalchemy.orm import Session

    from airflow_provider_rayorch.common.states import CONN_ID_KEY, RUN_ID_KEY, RUN_STORE_KEY

    session = Session(engine)
    session.query(XComModel).delete()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(runs):
        values = {RUN_ID_KEY: f"run-{i}", RUN_STORE_KEY: f"/stores/{i}", CONN_ID_KEY: f"c{i}"}
        for key, value in values.items():
            session.add(
                XComModel(
                    dag_run_id=1,
                    dag_id="d",
                    run_id="r",
                    task_id=f"submit_{i}",
                    map_index=-1,
                    key=key,
                    value=json.dumps(value),
                    timestamp=start + timedelta(seconds=i),
                )
            )
    summary = {"run_id": "run-0", "outputs": {"uri": "/stores/0/run-0/outputs/mb-00000"}}
    session.add(
        XComModel(
            dag_run_id=1,
            dag_id="d",
            run_id="r",
            task_id="wait",
            map_index=0,
            key="return_value",
            value=json.dumps({**summary, "microbatch": {"index": 0}}),
            timestamp=start,
        )
    )
    session.commit()
    return session


def _counted(engine: Any, call: Any) -> tuple[Any, int]:
    from sqlalchemy import event

    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(str(args[2]))

    event.listen(engine, "before_cursor_execute", count)
    try:
        return call(), len(statements)
    finally:
        event.remove(engine, "before_cursor_execute", count)


@pytest.mark.parametrize("lookup", ["recent_runs", "find_for_dag_run", "find_for_ti"])
def test_the_plugins_queries_do_not_grow_with_the_runs_listed(engine: Any, lookup: str) -> None:
    from airflow_provider_rayorch.plugins import resolve

    calls = {
        "recent_runs": lambda s: resolve.recent_runs(s, None),
        "find_for_dag_run": lambda s: resolve.find_for_dag_run(s, "d", "r"),
        "find_for_ti": lambda s: resolve.find_for_ti(s, "d", "r", "wait", 0),
    }
    counts = {}
    for runs in (10, 100):
        session = _session(engine, runs)
        found, counts[runs] = _counted(engine, lambda s=session: calls[lookup](s))
        session.close()
        if lookup == "find_for_ti":
            assert found == resolve.RunRef("/stores/0", "run-0", 0, "c0")
        else:
            assert len(found) == runs
            assert {(r.rayorch_run_id, r.store_uri, r.conn_id) for r in found} == {
                (f"run-{i}", f"/stores/{i}", f"c{i}") for i in range(runs)
            }
    assert counts[100] == counts[10], f"{lookup}: {counts[10]} then {counts[100]} queries"
