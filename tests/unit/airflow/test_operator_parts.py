"""The operator along its responsibilities: the submit operator
is composed from the operator's parts, not derived from it, and keeps its public
face: the same parameters, templated fields, links and OpenLineage methods."""

from __future__ import annotations

import pytest

from airflow_provider_rayorch.operators.microbatch import RayOrchSubmitOperator
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

pytestmark = pytest.mark.timeout(30)


def test_the_submit_operator_is_not_the_operator() -> None:
    assert not issubclass(RayOrchSubmitOperator, RayOrchOperator)
    for name in ("_poll", "poll_until_complete", "execute_complete", "_run_embedded"):
        assert not hasattr(RayOrchSubmitOperator, name), name


@pytest.mark.parametrize("cls", [RayOrchOperator, RayOrchSubmitOperator])
def test_both_take_the_parameters_and_a_dags_default_args(cls) -> None:
    from airflow.sdk import DAG

    defaults = {"poll_interval": 7.0, "rayorch_conn_id": "other", "max_failed_ratio": 0.5}
    with DAG("d", schedule=None, default_args=defaults):
        task = cls(task_id="t", pipeline="fake_pipelines:Square", sources=[1], durable=False)
    assert (task.poll_interval, task.rayorch_conn_id, task.max_failed_ratio) == (7.0, "other", 0.5)
    assert cls.template_fields == RayOrchOperator.template_fields
    assert cls.operator_extra_links == RayOrchOperator.operator_extra_links
    assert task.durable is False  # ResumableJobMixin's, which the submit operator took too


@pytest.mark.parametrize(
    "method",
    [
        "get_openlineage_facets_on_start",
        "get_openlineage_facets_on_complete",
        "get_openlineage_facets_on_failure",
    ],
)
def test_openlineage_methods_stay_on_both_tasks(method: str) -> None:
    """Airflow's OpenLineage listener calls them on the task."""
    assert callable(getattr(RayOrchOperator, method))
    assert callable(getattr(RayOrchSubmitOperator, method))
