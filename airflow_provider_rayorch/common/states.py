"""Ray job states as the provider sees them, and the XCom keys its tasks exchange.

One module for both, so the operator, the sensors, the triggers, the links and the
UI plugin spell them the same way. Imports neither airflow nor ray.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "JOB_ID_KEY",
    "JOB_URL_KEY",
    "LOCAL_HEAD_KEY",
    "RUN_ID_KEY",
    "RUN_STORE_KEY",
    "SUMMARY_KEY",
    "JobStatus",
    "with_job_status",
]

RUN_ID_KEY = "rayorch_run_id"
RUN_STORE_KEY = "rayorch_run_store"
JOB_ID_KEY = "rayorch_job_id"
JOB_URL_KEY = "rayorch_job_url"
SUMMARY_KEY = "rayorch_summary"
#: True when the task's Ray job ran on a loopback head the provider started (its
#: dashboard goes away with the head's teardown).
LOCAL_HEAD_KEY = "rayorch_local_head"


class JobStatus(StrEnum):
    """A Ray job's status (Ray's own five values) plus ``NOT_STARTED``, the provider's
    word for a run whose job was never submitted or never accepted."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    NOT_STARTED = "NOT_STARTED"
    #: The cluster does not know the job (never accepted, or the head was replaced).
    MISSING = "MISSING"

    @property
    def is_active(self) -> bool:
        """The job may still make progress."""
        return self in (JobStatus.PENDING, JobStatus.RUNNING)

    @property
    def is_terminal(self) -> bool:
        """The job ended (or never will start): nothing more will be committed by it."""
        return not self.is_active

    @classmethod
    def parse(cls, value: object) -> JobStatus:
        """A status from Ray's reply (a string or Ray's own enum); unknown values raise
        ``ValueError`` naming them."""
        text = str(getattr(value, "value", value)).upper()
        try:
            return cls(text)
        except ValueError:
            known = ", ".join(s.value for s in cls)
            raise ValueError(f"unknown Ray job status {value!r} (known: {known})") from None


def with_job_status(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A run summary with its ``job_status``: a run manifest is written by a driver that
    completed, so its job SUCCEEDED unless the manifest says otherwise."""
    return {**summary, "job_status": summary.get("job_status") or JobStatus.SUCCEEDED.value}
