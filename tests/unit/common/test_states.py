"""``with_job_status`` stamps only a status someone read: a summary without
one says UNKNOWN, never SUCCEEDED by default."""

from __future__ import annotations

import json

import pytest

from airflow_provider_rayorch.common.states import JobStatus, with_job_status

SUMMARY = {"run_id": "r", "state": "success", "sources": {"total": 1}}


@pytest.mark.parametrize(
    ("summary", "read", "expected"),
    [
        pytest.param(SUMMARY, None, "UNKNOWN", id="nobody-read-it"),
        pytest.param(SUMMARY, JobStatus.MISSING, "MISSING", id="the-job-is-gone"),
        pytest.param(SUMMARY, "FAILED", "FAILED", id="read-as-text"),
        pytest.param(SUMMARY, JobStatus.SUCCEEDED, "SUCCEEDED", id="read-succeeded"),
        pytest.param({**SUMMARY, "job_status": "STOPPED"}, "SUCCEEDED", "STOPPED", id="its-own"),
    ],
)
def test_the_job_status_is_one_that_was_read(summary, read, expected) -> None:
    stamped = with_job_status(summary, read)
    assert stamped["job_status"] == expected
    assert json.loads(json.dumps(stamped)) == stamped  # XCom-safe: a str, not the enum
    assert "job_status" not in SUMMARY
