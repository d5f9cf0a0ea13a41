"""``rayorch_microbatch_group(local_head="shared")``: a ``ray_head`` task that finds the
machine's shared head, and no teardown that would stop it under other runs."""

from __future__ import annotations

import pytest
from airflow.sdk import DAG

from airflow_provider_rayorch.operators.local_head import RayLocalHeadStartOperator
from airflow_provider_rayorch.operators.microbatch import rayorch_microbatch_group
from airflow_provider_rayorch.rayorch.errors import UsageError


def _group_tasks(local_head: object) -> DAG:
    with DAG("shared_head_group", schedule=None) as dag:
        rayorch_microbatch_group("docs", pipeline="m:f", sources=["a", "b"], local_head=local_head)
    return dag


def test_a_shared_head_group_finds_the_head_and_never_stops_it() -> None:
    dag = _group_tasks("shared")
    head = dag.get_task("docs.ray_head")
    assert isinstance(head, RayLocalHeadStartOperator)
    assert head.shared is True
    assert "docs.stop_ray_head" not in dag.task_ids
    assert dag.get_task("docs.submit").upstream_task_ids == {"docs.ray_head"}
    assert dag.get_task("docs.submit").answered_before is True


def test_a_head_of_the_runs_own_is_stopped_by_its_teardown() -> None:
    dag = _group_tasks(True)
    assert dag.get_task("docs.ray_head").shared is False
    assert dag.get_task("docs.stop_ray_head").is_teardown


@pytest.mark.parametrize("value", ["yes", "isolated", 1.5])
def test_an_unknown_local_head_value_names_the_choices(value: object) -> None:
    with pytest.raises(UsageError, match=r"local_head=.*True.*\"shared\".*False"):
        _group_tasks(value)
