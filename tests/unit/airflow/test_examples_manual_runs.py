"""Every templated field of every example DAG renders on a run with no
logical date, the REST API's default (``POST .../dagRuns {"logical_date": null}``) and
the UI trigger form's.

Such a run's context has no ``logical_date``, ``ds``, ``ts`` nor ``data_interval_*``
(the Task SDK adds them only with a logical date), so a template naming one fails the
task with ``UndefinedError`` before it does anything. The context below holds exactly
the keys the Task SDK gives such a run; the end-to-end proof is
tests/e2e/test_manual_runs.py.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest.mock import MagicMock

import pytest

pytestmark = pytest.mark.timeout(120)

EXAMPLES = Path(__file__).resolve().parents[3] / "dags_examples"
RUN_AFTER = datetime(2026, 3, 4, 10, 45, tzinfo=UTC)


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    sys.path.insert(0, str(EXAMPLES))
    try:
        bag = DagBag(dag_folder=str(EXAMPLES))
        assert bag.import_errors == {}
        yield bag
    finally:
        sys.path.remove(str(EXAMPLES))


class _TaskInstance(SimpleNamespace):
    """What templates may ask of ``ti``: XComs of upstream tasks, which a real run has
    (any value with any attribute: the dates are the point here, not the XComs)."""

    def xcom_pull(self, *args: Any, **kwargs: Any) -> Any:
        return MagicMock(name=f"xcom_pull{args}{kwargs}")


def manual_run_context(dag: Any, task: Any, *, logical_date: datetime | None) -> dict[str, Any]:
    """The template context the Task SDK builds for a manual run (task_runner's
    ``get_template_context``): the date keys only when the run has a logical date."""
    from airflow.sdk.execution_time.context import MacrosAccessor

    dag_run = SimpleNamespace(
        dag_id=dag.dag_id,
        run_id="manual__2026-03-04T10:45:00+00:00",
        logical_date=logical_date,
        data_interval_start=None,
        data_interval_end=None,
        run_after=RUN_AFTER,
        run_type="manual",
        conf={},
    )
    ti = _TaskInstance(task_id=task.task_id, dag_id=dag.dag_id, map_index=0, try_number=1)
    context: dict[str, Any] = {
        "dag": dag,
        "task": task,
        "ti": ti,
        "task_instance": ti,
        "dag_run": dag_run,
        "run_id": dag_run.run_id,
        "params": {},
        "macros": MacrosAccessor(),
        "inlets": [],
        "outlets": [],
        "conf": {},
        "map_index_template": None,
        "task_instance_key_str": f"{dag.dag_id}__{task.task_id}__{dag_run.run_id}",
        "prev_start_date_success": None,
        "prev_end_date_success": None,
        "triggering_asset_events": {},
    }
    if logical_date is not None:
        start = logical_date - timedelta(hours=1)
        dag_run.data_interval_start, dag_run.data_interval_end = start, logical_date
        context.update(
            logical_date=logical_date,
            ds=logical_date.strftime("%Y-%m-%d"),
            ts=logical_date.isoformat(),
            data_interval_start=start,
            data_interval_end=logical_date,
        )
    return context


def templated_values(task: Any) -> dict[str, Any]:
    """Each templated field's unrendered value (a mapped task's from its partial kwargs)."""
    if hasattr(task, "partial_kwargs"):
        values = {
            **task.partial_kwargs,
            **getattr(task, "expand_input", SimpleNamespace()).__dict__,
        }
        return {f: values[f] for f in task.template_fields if f in task.partial_kwargs}
    return {f: getattr(task, f) for f in task.template_fields if hasattr(task, f)}


def render_all(dag: Any, *, logical_date: datetime | None) -> dict[tuple[str, str], Any]:
    rendered = {}
    for task in dag.tasks:
        env = dag.get_template_env()
        context = manual_run_context(dag, task, logical_date=logical_date)
        for field, value in templated_values(task).items():
            rendered[(task.task_id, field)] = task.render_template(value, context, env)
    return rendered


@pytest.mark.parametrize(
    "dag_id",
    [
        "rayorch_minimal",
        "rayorch_ingest",
        "rayorch_documents",
        "rayorch_video",
        "rayorch_events",
    ],
)
def test_every_templated_field_renders_without_a_logical_date(dagbag, dag_id: str) -> None:
    assert dagbag.dag_ids, "no example DAG parsed"
    render_all(dagbag.dags[dag_id], logical_date=None)


def test_every_example_dag_is_checked(dagbag) -> None:
    checked = {"rayorch_minimal", "rayorch_ingest", "rayorch_documents", "rayorch_video"}
    assert set(dagbag.dag_ids) == checked | {"rayorch_events"}


def test_a_manual_ingest_run_covers_the_hour_up_to_its_trigger(dagbag) -> None:
    """No data interval: the files modified in the hour before the run was triggered,
    so a file that just arrived is prepared (docs/airflow/getting-started.md)."""
    from airflow_provider_rayorch.common.sources import _as_datetime

    submit = render_all(dagbag.dags["rayorch_ingest"], logical_date=None)
    after = _as_datetime(submit[("ingest.submit", "sources_modified_after")])
    before = _as_datetime(submit[("ingest.submit", "sources_modified_before")])
    assert (after, before) == (RUN_AFTER - timedelta(hours=1), RUN_AFTER)


def test_a_scheduled_ingest_run_covers_its_data_interval(dagbag) -> None:
    from airflow_provider_rayorch.common.sources import _as_datetime

    end = datetime(2026, 3, 4, 10, tzinfo=UTC)
    submit = render_all(dagbag.dags["rayorch_ingest"], logical_date=end)
    after = _as_datetime(submit[("ingest.submit", "sources_modified_after")])
    before = _as_datetime(submit[("ingest.submit", "sources_modified_before")])
    assert (after, before) == (end - timedelta(hours=1), end)


def test_a_window_bound_that_is_no_date_fails_naming_the_fix(tmp_path: Path) -> None:
    """``{{ prev_data_interval_end_success }}`` and friends render ``None`` (the text)
    when there is no such run: the task fails once, saying which value and the fix,
    instead of Python's ``Invalid isoformat string``."""
    from airflow_provider_rayorch.common.sources import resolve_sources
    from airflow_provider_rayorch.exceptions import RayOrchPermanentError

    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(RayOrchPermanentError, match=r"'None'.*ISO 8601.*default\('', true\)"):
        resolve_sources(f"{tmp_path}/*.txt", modified_after="None")
