"""Why a job ended before a commit: the driver's own word, found in Ray's message or
in the driver log the run store keeps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from airflow_provider_rayorch.common.job_end import driver_cause, explain_job_end
from airflow_provider_rayorch.runs.driver_log import StoredLog

RAY_LOGS = "Job entrypoint command failed with exit code {code}, last available logs (truncated):\n"
CHAINED = (
    "Traceback (most recent call last):\n"
    '  File "a.py", line 1, in <module>\n'
    "KeyError: 'page'\n"
    "\nDuring handling of the above exception, another exception occurred:\n\n"
    "Traceback (most recent call last):\n"
    '  File "b.py", line 2, in run\n'
    "\x1b[31mRuntimeError: the OCR model did not load\x1b[0m\n"
    "RAYORCH_EVENT {}\n"
)


@pytest.mark.parametrize(
    ("texts", "cause"),
    [
        pytest.param(
            ['x\nRAYORCH_ERROR {"exit_code": 5, "message": "does not compile"}\n'],
            "does not compile",
            id="error-line",
        ),
        pytest.param([CHAINED], "RuntimeError: the OCR model did not load", id="last-traceback"),
        pytest.param(["no cause", CHAINED], "RuntimeError: the OCR model did not load", id="2nd"),
        pytest.param(["just lines\nmore lines"], None, id="none"),
    ],
)
def test_the_drivers_cause(texts: list[str], cause: str | None) -> None:
    assert driver_cause(*texts) == cause


def test_a_killed_driver_has_rays_word_as_its_cause() -> None:
    end = explain_job_end(ray_message=RAY_LOGS.format(code=-9) + "microbatch 1/3 committed\n")
    assert end.cause == "Job entrypoint command failed with exit code -9"
    assert end.tail == ["microbatch 1/3 committed"]
    assert "the Ray job's log" in end.why


def test_the_stored_log_names_its_uri_and_gives_the_tail() -> None:
    stored = StoredLog("/store/r/logs/driver-2.log", "a\n\x1b[1mb\x1b[0m\n" + CHAINED, None)
    end = explain_job_end(ray_message="", stored=stored)
    assert end.cause == "RuntimeError: the OCR model did not load"
    assert end.why.endswith("the driver's log is kept at /store/r/logs/driver-2.log")
    assert end.tail[:2] == ["a", "b"]


def test_an_earlier_drivers_log_is_not_this_jobs() -> None:
    job_started = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    old = StoredLog("/s/r/logs/driver-1.log", CHAINED, job_started - timedelta(hours=1))
    end = explain_job_end(ray_message="", stored=old, job_started=job_started)
    assert end.log_uri is None
    assert end.cause == ""
    assert end.why.startswith("no reason given;")
    new = StoredLog("/s/r/logs/driver-2.log", CHAINED, job_started + timedelta(seconds=3))
    assert explain_job_end(stored=new, job_started=job_started).log_uri == new.uri
