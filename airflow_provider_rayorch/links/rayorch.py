"""Operator extra link "Ray job": the Ray dashboard's page of the task's job.

A job that runs on a loopback head this provider started has a dashboard only as
long as that head, which the group's teardown stops; and Airflow 3 computes an
operator's link once, on the worker, when the task ends (it is stored as an XCom).
So for such a job the link opens the run's stored report (the page "RayOrch report"
opens) instead of a dashboard that will be gone; the dashboard address, valid until
the teardown, is in the submit task's log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperatorLink

from airflow_provider_rayorch.common.states import JOB_URL_KEY, LOCAL_HEAD_KEY

if TYPE_CHECKING:
    from airflow.sdk.types import TaskInstanceKey

__all__ = ["RayJobLink"]


class RayJobLink(BaseOperatorLink):
    """ "Ray job": the dashboard page of the job a RayOrch task submitted on a cluster;
    for a job on the provider's loopback head, the run's stored report."""

    name = "Ray job"

    def get_link(self, operator: Any, *, ti_key: TaskInstanceKey) -> str:
        from airflow.sdk.execution_time.xcom import XCom

        if getattr(operator, "_job_id", "") is None:  # this try submitted no Ray job
            return ""
        url = XCom.get_value(ti_key=ti_key, key=JOB_URL_KEY)
        if not url:
            return ""
        if XCom.get_value(ti_key=ti_key, key=LOCAL_HEAD_KEY):  # its dashboard ends with the head
            from airflow_provider_rayorch.links.report import report_path_of

            return report_path_of(ti_key)
        return str(url)
