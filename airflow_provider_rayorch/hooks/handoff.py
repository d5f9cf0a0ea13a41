"""Hand a Ray job's driver the run store's options without its ``runtime_env``.

Ray shows a job's ``runtime_env`` to every worker's command line, its runtime_env
agent's log and the job's record (:mod:`airflow_provider_rayorch.runs.handoff`). The
options are stored as one entry of the cluster's key-value store instead, with the
Jobs API's package route (``PUT /api/packages/gcs/<name>``: any bytes, kept until
deleted, never logged), and the job's ``runtime_env.env_vars`` get only the entry's
key; the driver takes the entry at its start.

The entry is not pinned: the route's ``GET`` would give it a temporary reference,
and Ray would delete it when that expires (10 minutes), before the driver of a job
that waits longer for resources could take it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.runs.handoff import deposit_name, key_of
from airflow_provider_rayorch.runs.secrets import RUN_STORE_OPTIONS_KEY_ENV

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_rayorch.hooks.jobs_api import JobsApi

__all__ = ["deposit_run_store_options"]


def deposit_run_store_options(
    api: JobsApi, submission_id: str, options: Mapping[str, Any] | None
) -> dict[str, str]:
    """Store ``options`` for the driver of job ``submission_id``; the ``env_vars``
    naming the entry (empty, and nothing stored, without options)."""
    if not options:
        return {}
    name = deposit_name(submission_id)
    body = json.dumps(dict(options), sort_keys=True).encode()
    api.request(
        "PUT",
        f"/api/packages/gcs/{name}",
        what=f"handing job {submission_id!r} its run store options",
        content=body,
    )
    return {RUN_STORE_OPTIONS_KEY_ENV: key_of(name)}
