"""Operator extra link "Ray job": the Ray dashboard's page of the task's job.

A job that ran on a loopback head this provider started lives only as long as that
head: once the teardown has stopped it, the dashboard is gone, and the link opens
the run's stored report instead (the same page as "RayOrch report").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperatorLink

from airflow_provider_rayorch.common.states import JOB_URL_KEY, LOCAL_HEAD_KEY

if TYPE_CHECKING:
    from airflow.sdk.types import TaskInstanceKey

__all__ = ["JOB_URL_KEY", "RayJobLink"]


def _dashboard_gone(url: str) -> bool:
    """The URL's loopback head is no longer running (stopped by its teardown)."""
    from airflow_provider_rayorch.common import local_heads

    base = url.split("/#/", 1)[0]
    return local_heads.lookup(base) is None


class RayJobLink(BaseOperatorLink):
    """ "Ray job": the dashboard page of the job a RayOrch task submitted (cluster only);
    for a job on a stopped loopback head, the run's stored report."""

    name = "Ray job"

    def get_link(self, operator: Any, *, ti_key: TaskInstanceKey) -> str:
        from airflow.sdk.execution_time.xcom import XCom

        if getattr(operator, "_job_id", "") is None:  # this try submitted no Ray job
            return ""
        url = XCom.get_value(ti_key=ti_key, key=JOB_URL_KEY)
        if not url:
            return ""
        if XCom.get_value(ti_key=ti_key, key=LOCAL_HEAD_KEY) and _dashboard_gone(str(url)):
            from airflow_provider_rayorch.links.report import report_path_of

            return report_path_of(ti_key)
        return str(url)
