"""The Ray job learns its parent OpenLineage run: the Airflow task that submitted it.

As the Databricks provider hands Spark its parent job (apache/airflow#67894), the
submit adds OpenLineage's parent-run variables to the Ray job's
``runtime_env.env_vars``, so anything emitting OpenLineage inside the job (the
``openlineage-python`` client, dbt-ol, Spark on Ray) links up under the task:

- ``OPENLINEAGE_PARENT_ID``: ``{namespace}/{job_name}/{run_id}`` of the task,
- ``OPENLINEAGE_ROOT_PARENT_ID``: the same for the DAG run (the root),
- ``OPENLINEAGE_CONTEXT``: both as JSON (``{"parent": {"run", "job", "root"}}``),
  the standardized form (OpenLineage#4682) that readers try first.

They are added only when ``apache-airflow-providers-openlineage`` is installed and
enabled, built with its own macros (the run ids its listener uses), and never hold
a secret: names and UUIDs only. A variable the user already set wins.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["PARENT_ENV_VARS", "parent_run_env", "with_parent_run"]

#: The variables :func:`parent_run_env` sets.
PARENT_ENV_VARS = ("OPENLINEAGE_PARENT_ID", "OPENLINEAGE_ROOT_PARENT_ID", "OPENLINEAGE_CONTEXT")


def _enabled() -> bool:
    try:
        from airflow.providers.openlineage import conf
    except ImportError:
        return False
    return not conf.is_disabled()


def parent_run_env(ti: Any) -> dict[str, str]:
    """The parent-run variables of task instance ``ti`` (empty when OpenLineage is not
    installed or is disabled)."""
    if ti is None or not _enabled():
        return {}
    from airflow.providers.openlineage.plugins.macros import (
        lineage_job_name,
        lineage_job_namespace,
        lineage_root_job_name,
        lineage_root_job_namespace,
        lineage_root_run_id,
        lineage_run_id,
    )

    namespace, name, run = lineage_job_namespace(), lineage_job_name(ti), lineage_run_id(ti)
    root_namespace = lineage_root_job_namespace(ti)
    root_name, root_run = lineage_root_job_name(ti), lineage_root_run_id(ti)
    context = {
        "parent": {
            "run": {"runId": run},
            "job": {"namespace": namespace, "name": name},
            "root": {
                "run": {"runId": root_run},
                "job": {"namespace": root_namespace, "name": root_name},
            },
        }
    }
    return {
        "OPENLINEAGE_PARENT_ID": f"{namespace}/{name}/{run}",
        "OPENLINEAGE_ROOT_PARENT_ID": f"{root_namespace}/{root_name}/{root_run}",
        "OPENLINEAGE_CONTEXT": json.dumps(context, sort_keys=True),
    }


def with_parent_run(runtime_env: Mapping[str, Any] | None, ti: Any) -> dict[str, Any]:
    """``runtime_env`` with the parent-run variables added to its ``env_vars`` (the
    user's own values win); unchanged when OpenLineage is off."""
    env = dict(runtime_env or {})
    try:
        parent = parent_run_env(ti)
    except Exception:  # lineage must never stop a submit
        parent = {}
    if parent:
        env["env_vars"] = {**parent, **dict(env.get("env_vars") or {})}
    return env
