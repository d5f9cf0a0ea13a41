"""The Ray job learns its parent OpenLineage run through its runtime_env's env_vars."""

from __future__ import annotations

import json

import pytest

from airflow_provider_rayorch.lineage.parent import PARENT_ENV_VARS
from airflow_provider_rayorch.operators.microbatch import RayOrchSubmitOperator

from .conftest import SPEC, context_for, secret_hook, ti_for, with_hook

pytest.importorskip("airflow.providers.openlineage")
pytestmark = pytest.mark.timeout(60)


def _submitted_env(store_root) -> dict[str, str]:
    op = RayOrchSubmitOperator(
        task_id="submit",
        pipeline=SPEC,
        sources=[1, 2, 3],
        input_batch_size=2,
        runtime_env={"env_vars": {"MINE": "1"}},
    )
    with_hook(op, secret_hook(store_root, runs_driver=False))
    op.execute(context_for(ti_for("submit")))
    (call,) = op.hook.submit_job.call_args_list
    return dict(call.kwargs["runtime_env"]["env_vars"])


def test_the_submitted_job_names_its_parent_run(store_root, openlineage_on) -> None:
    from airflow.providers.openlineage.plugins.macros import (
        lineage_parent_id,
        lineage_root_parent_id,
        lineage_run_id,
    )

    env = _submitted_env(store_root)
    ti = ti_for("submit")
    assert env["MINE"] == "1"
    assert env["OPENLINEAGE_PARENT_ID"] == lineage_parent_id(ti)
    assert env["OPENLINEAGE_ROOT_PARENT_ID"] == lineage_root_parent_id(ti)
    context = json.loads(env["OPENLINEAGE_CONTEXT"])
    assert context["parent"]["run"]["runId"] == lineage_run_id(ti)
    assert context["parent"]["job"]["name"] == "dag.submit"
    assert context["parent"]["root"]["job"]["name"] == "dag"


def test_an_openlineage_reader_in_the_job_links_up(store_root, openlineage_on, monkeypatch) -> None:
    """OpenLineage's own reader of these variables (the dbt integration's, in
    openlineage-integration-common) finds the task as parent and the DAG run as root."""
    utils = pytest.importorskip("openlineage.common.provider.dbt.utils")
    env = _submitted_env(store_root)
    for name in PARENT_ENV_VARS:
        monkeypatch.setenv(name, env[name])
    from_context = utils.get_parent_run_metadata_from_context()
    monkeypatch.delenv("OPENLINEAGE_CONTEXT")
    legacy = utils.get_parent_run_metadata()
    for parent in (from_context, legacy):
        assert (parent.job_namespace, parent.job_name) == ("default", "dag.submit")
        assert parent.root_parent_job_name == "dag"
        assert env["OPENLINEAGE_PARENT_ID"].endswith(parent.run_id)


def test_nothing_is_added_while_openlineage_is_disabled(store_root) -> None:
    from airflow.providers.openlineage import conf

    assert conf.is_disabled()  # the test environment's default
    assert _submitted_env(store_root) == {"MINE": "1"}
