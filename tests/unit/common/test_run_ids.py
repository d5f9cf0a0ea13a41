"""A task's run id is the same on every try and differs by map index; each try has
its own Ray submission id."""

from __future__ import annotations

from types import SimpleNamespace

from airflow_provider_rayorch.common.run_ids import (
    derive_run_id,
    run_id_from_context,
    submission_id,
)


def test_run_id_ignores_try_number_and_separates_map_indexes() -> None:
    a = derive_run_id("d", "r", "t", -1)
    assert a == derive_run_id("d", "r", "t", -1)
    assert a != derive_run_id("d", "r", "t", 0)
    assert a != derive_run_id("d", "r2", "t", -1)
    assert submission_id(a, 1) != submission_id(a, 2)


def test_the_run_id_from_a_context_is_the_task_instances() -> None:
    ti = SimpleNamespace(dag_id="d", run_id="r", task_id="t", map_index=2, try_number=3)
    assert run_id_from_context({"ti": ti}) == derive_run_id("d", "r", "t", 2)
