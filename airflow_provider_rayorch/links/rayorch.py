"""Operator extra link to the Ray dashboard's job page."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk.types import TaskInstanceKey

__all__ = ["JOB_URL_KEY", "RayJobLink"]

#: XCom key holding the dashboard URL of the task's Ray job.
JOB_URL_KEY = "rayorch_job_url"


class RayJobLink(BaseOperatorLink):
    """ "Ray job": the dashboard page of the job a RayOrch task submitted (cluster only)."""

    name = "Ray job"

    def get_link(self, operator: Any, *, ti_key: TaskInstanceKey) -> str:
        from airflow.sdk.execution_time.xcom import XCom

        if getattr(operator, "_job_id", "") is None:  # this try submitted no Ray job
            return ""
        url = XCom.get_value(ti_key=ti_key, key=JOB_URL_KEY)
        return str(url) if url else ""
