"""Ray job states as the provider sees them, and the XCom keys its tasks exchange.

One module for both, so the operator, the sensors, the triggers, the links and the
UI plugin spell them the same way. Imports neither airflow nor ray.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.runs.job_status import JobStatus

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "CONN_ID_KEY",
    "JOB_ID_KEY",
    "JOB_URL_KEY",
    "LOCAL_HEAD_KEY",
    "RUN_ID_KEY",
    "RUN_STORE_KEY",
    "SUMMARY_KEY",
    "UNKNOWN_JOB_STATUS",
    "JobStatus",
    "with_job_status",
]

RUN_ID_KEY = "rayorch_run_id"
RUN_STORE_KEY = "rayorch_run_store"
#: the connection whose run_store_options open that store (for the report pages)
CONN_ID_KEY = "rayorch_conn_id"
JOB_ID_KEY = "rayorch_job_id"
JOB_URL_KEY = "rayorch_job_url"
SUMMARY_KEY = "rayorch_summary"
#: True when the task's Ray job ran on a loopback head the provider started (its
#: dashboard goes away with the head's teardown).
LOCAL_HEAD_KEY = "rayorch_local_head"


#: A summary's ``job_status`` when nobody read the job's status.
UNKNOWN_JOB_STATUS = "UNKNOWN"


def with_job_status(
    summary: Mapping[str, Any], job_status: JobStatus | str | None = None
) -> dict[str, Any]:
    """A summary with its ``job_status``: its own, else the one the caller read
    (``job_status``), else ``UNKNOWN``; never a status nobody read."""
    own = summary.get("job_status")
    read = None if job_status is None else str(getattr(job_status, "value", job_status))
    return {**summary, "job_status": own or read or UNKNOWN_JOB_STATUS}
