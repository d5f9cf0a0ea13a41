"""What a task says when its connection or run store setting is wrong: the setting,
where it was looked up, and the fix (never a bare Airflow or OS error)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from unittest import mock

import pytest

from airflow_provider_rayorch.exceptions import RayOrchConnectionNotFound
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator
from airflow_provider_rayorch.rayorch.errors import StoreError

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)


class _StateStore(dict):
    def set(self, key, value, retention=None):
        self[key] = value


def _context() -> dict[str, object]:
    ti = mock.MagicMock(
        dag_id="dag", run_id="manual__1", task_id="task", map_index=-1, try_number=1
    )
    return {"ti": ti, "task_state_store": _StateStore(), "outlet_events": mock.MagicMock()}


def test_a_task_with_an_undefined_conn_id_fails_naming_it_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, fake_engine
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_TYPO", raising=False)
    op = RayOrchOperator(
        task_id="task",
        pipeline="fake_pipelines:Square",
        sources=[1, 2],
        rayorch_conn_id="rayorch_typo",
    )
    with pytest.raises(RayOrchConnectionNotFound, match="rayorch_conn_id 'rayorch_typo'") as err:
        op.execute(_context())
    assert "AIRFLOW_CONN_RAYORCH_TYPO" in str(err.value)
    assert "airflow connections add rayorch_typo" in str(err.value)


def test_a_task_whose_run_store_is_a_file_fails_naming_it_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_engine
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)  # embedded Ray
    blocker = tmp_path / "runs"
    blocker.write_text("a file where the store's folder should be")
    op = RayOrchOperator(
        task_id="task", pipeline="fake_pipelines:Square", sources=[1, 2], run_store=str(blocker)
    )
    with pytest.raises(StoreError) as err:
        op.execute(_context())
    assert f"the run store {blocker} is not a folder: {blocker} is a file" in str(err.value)
    assert "set `run_store`" in str(err.value)
