"""A user who may read one DAG only: the plugin answers 403 for another DAG's ``/ti``
and ``/dagrun`` (before it looks anything up), serves the DAG the user may read, and
its runs page lists no row of the other DAG.

Airflow's SimpleAuthManager grants DAGs by role and team only, so the user's access
comes from a SimpleAuthManager that also names the DAGs each user may read. The
plugin's own access checks run as in the API server (Airflow's
``requires_access_dag`` and ``get_authorized_dag_ids``); the metadata DB is an
in-memory SQLite with Airflow's tables, its XComs naming one run per DAG, where the
plugin's queries run.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest
from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

from airflow_provider_rayorch.common.states import RUN_ID_KEY, RUN_STORE_KEY

from .conftest import make_run

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)

MINE, THEIRS = "docs_team_a", "docs_team_b"
RUN_A, RUN_B = "run-of-a", "run-of-b"
ALICE = SimpleAuthManagerUser(username="alice", role="viewer")


class OneDagAuthManager(SimpleAuthManager):
    """SimpleAuthManager whose non-admin users read the DAGs ``READS`` names only;
    the DAGs it knows are ``DAGS`` (the DagModel table)."""

    READS = {"alice": {MINE}}
    DAGS = {MINE, THEIRS}

    def is_authorized_dag(
        self, *, method: Any, user: Any, access_entity: Any = None, details: Any = None
    ) -> bool:
        allowed = super().is_authorized_dag(
            method=method, user=user, access_entity=access_entity, details=details
        )
        if not allowed or self._is_admin(user):
            return allowed
        dag_id = getattr(details, "id", None)
        return dag_id is not None and dag_id in self.READS.get(user.username, set())

    def get_authorized_dag_ids(
        self, *, user: Any, method: Any = "GET", session: Any = None
    ) -> set[str]:
        return self.filter_authorized_dag_ids(dag_ids=set(self.DAGS), user=user, method=method)


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    import airflow.api_fastapi.app as airflow_app
    from airflow.api_fastapi.core_api import security
    from airflow.models import import_all_models
    from airflow.models.base import Base
    from airflow.models.dag import DagModel
    from airflow.models.xcom import XComModel
    from fastapi.testclient import TestClient
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session
    from sqlalchemy.pool import StaticPool

    from airflow_provider_rayorch.plugins import app as plugin_app

    engine = create_engine(
        "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}
    )  # one in-memory DB
    import_all_models()
    Base.metadata.create_all(engine)
    stores = {
        RUN_A: make_run(tmp_path / "a", run_id=RUN_A),
        RUN_B: make_run(tmp_path / "b", run_id=RUN_B),
    }
    with Session(engine) as session:
        for n, (dag_id, run) in enumerate(((MINE, RUN_A), (THEIRS, RUN_B))):
            for key, value in ((RUN_ID_KEY, run), (RUN_STORE_KEY, stores[run].uri)):
                session.add(
                    XComModel(
                        dag_run_id=n, task_id="docs", map_index=-1, key=key, dag_id=dag_id,
                        run_id="manual__1", value=XComModel.serialize_value(value),
                    )
                )  # fmt: skip
        session.commit()

    @contextmanager
    def create_session() -> Iterator[Session]:
        with Session(engine) as session:
            yield session

    manager = OneDagAuthManager()
    monkeypatch.setattr(plugin_app, "create_session", create_session)
    monkeypatch.setattr(airflow_app, "get_auth_manager", lambda: manager)
    monkeypatch.setattr(security, "get_auth_manager", lambda: manager)
    monkeypatch.setattr(DagModel, "get_team_name", staticmethod(lambda dag_id: None))
    looked_up: list[str] = []
    find_for_ti, find_for_dag_run = (
        plugin_app.resolve.find_for_ti,
        plugin_app.resolve.find_for_dag_run,
    )

    def _ti(session: Any, dag_id: str, *args: Any) -> Any:
        looked_up.append(dag_id)
        return find_for_ti(session, dag_id, *args)

    def _dag_run(session: Any, dag_id: str, run_id: str) -> Any:
        looked_up.append(dag_id)
        return find_for_dag_run(session, dag_id, run_id)

    monkeypatch.setattr(plugin_app.resolve, "find_for_ti", _ti)
    monkeypatch.setattr(plugin_app.resolve, "find_for_dag_run", _dag_run)
    plugin_app.app.dependency_overrides[security.get_user] = lambda: ALICE
    http = TestClient(plugin_app.app)
    http.looked_up = looked_up  # type: ignore[attr-defined]
    yield http
    plugin_app.app.dependency_overrides.clear()


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/ti?dag_id={dag}&run_id=manual__1&task_id=docs", id="ti"),
        pytest.param("/dagrun?dag_id={dag}&run_id=manual__1", id="dagrun"),
    ],
)
def test_another_dags_report_is_forbidden_and_its_own_is_served(client: Any, path: str) -> None:
    theirs = client.get(path.format(dag=THEIRS))
    assert theirs.status_code == 403
    assert RUN_B not in theirs.text
    assert client.looked_up == []  # refused before the metadata was read
    mine = client.get(path.format(dag=MINE))
    assert mine.status_code == 200
    assert RUN_A in mine.text
    assert client.looked_up == [MINE]


def test_the_runs_page_lists_no_row_of_a_dag_the_user_may_not_read(client: Any) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert RUN_A in page.text
    assert MINE in page.text
    assert RUN_B not in page.text
    assert THEIRS not in page.text
    OneDagAuthManager.READS["alice"] = {MINE, THEIRS}
    try:
        both = client.get("/").text
    finally:
        OneDagAuthManager.READS["alice"] = {MINE}
    assert RUN_B in both
    assert THEIRS in both
