"""The run-state rule of runs.state_rule, case by case (pure: facts and a clock in)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from airflow_provider_rayorch.runs.state_rule import STALE_AFTER, RunFacts, decide_state

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
RECENT = NOW - timedelta(minutes=5)
OLD = NOW - STALE_AFTER - timedelta(minutes=1)


def _record(status: str, at: datetime, message: str | None = "why") -> dict[str, object]:
    return {"job_status": status, "message": message, "at": at.isoformat()}


@pytest.mark.parametrize(
    ("facts", "state", "job_status"),
    [
        pytest.param(
            RunFacts(True, "success", job_state=_record("FAILED", RECENT), last_write=OLD),
            "success",
            "FAILED",
            id="run-manifest-wins",
        ),
        pytest.param(
            RunFacts(True, job_state=_record("NOT_STARTED", RECENT), last_write=OLD),
            "not_started",
            "NOT_STARTED",
            id="never-started",
        ),
        pytest.param(
            RunFacts(True, job_state=_record("STOPPED", OLD), last_write=OLD),
            "stopped",
            "STOPPED",
            id="stopped-long-ago-stays-stopped",
        ),
        pytest.param(
            # superseded by a later commit: neither its status nor its message shows
            RunFacts(True, job_state=_record("FAILED", OLD), last_write=RECENT),
            "running",
            None,
            id="failed-record-of-an-earlier-attempt",
        ),
        pytest.param(
            RunFacts(True, all_committed_state="failed", last_write=RECENT),
            "failed",
            None,
            id="all-committed-no-manifest-yet",
        ),
        pytest.param(
            RunFacts(True, job_state=_record("SUCCEEDED", RECENT), last_write=OLD),
            "unknown",
            "SUCCEEDED",
            id="succeeded-without-run-manifest",
        ),
        pytest.param(
            RunFacts(True, job_state=_record("PENDING", RECENT), last_write=OLD),
            "pending",
            "PENDING",
            id="job-pending",
        ),
        pytest.param(
            RunFacts(True, job_state=_record("RUNNING", RECENT), last_write=OLD),
            "running",
            "RUNNING",
            id="job-running-recently-seen",
        ),
        pytest.param(
            RunFacts(True, job_state=_record("RUNNING", OLD), last_write=OLD),
            "unknown",
            "RUNNING",
            id="running-record-gone-stale",
        ),
        pytest.param(RunFacts(True, last_write=RECENT), "running", None, id="no-record-recent"),
        pytest.param(RunFacts(True, last_write=OLD), "unknown", None, id="no-record-stale"),
        pytest.param(RunFacts(False), "unknown", None, id="no-plan"),
    ],
)
def test_state_rule(facts: RunFacts, state: str, job_status: str | None) -> None:
    decided = decide_state(facts, now=NOW)
    assert (decided.state, decided.job_status) == (state, job_status)


def test_terminal_states_carry_the_record_message_and_stale_ones_say_since_when() -> None:
    ended = decide_state(RunFacts(True, job_state=_record("NOT_STARTED", RECENT)), now=NOW)
    assert ended.message == "why"
    assert ended.is_terminal
    stale = decide_state(RunFacts(True, last_write=OLD), now=NOW)
    assert stale.message is not None
    assert f"since {OLD:%Y-%m-%d %H:%M} UTC (61 min ago)" in stale.message
    assert not stale.is_terminal
    # a superseded terminal record's message is not shown on the running run
    retried = decide_state(
        RunFacts(True, job_state=_record("FAILED", OLD, "old failure"), last_write=RECENT),
        now=NOW,
    )
    assert retried.message is None


# -- issue 18 finding 1: a finished run must not say it is running --------------------


@pytest.mark.parametrize(
    ("facts", "state"),
    [
        pytest.param(
            RunFacts(True, "success", job_state=_record("RUNNING", OLD), last_write=RECENT),
            "success",
            id="submit-record-older-than-the-run-manifest",
        ),
        pytest.param(
            RunFacts(True, "failed", job_state=_record("RUNNING", OLD), last_write=RECENT),
            "failed",
            id="failed-run-submit-record",
        ),
        pytest.param(
            # a poller saw the job RUNNING in the seconds between the driver's run manifest
            # and its exit: the run manifest is the driver's last word, the run has ended
            RunFacts(True, "success", job_state=_record("RUNNING", RECENT), last_write=OLD),
            "success",
            id="heartbeat-after-the-run-manifest",
        ),
        pytest.param(
            RunFacts(
                True,
                all_committed_state="success",
                job_state=_record("PENDING", OLD),
                last_write=RECENT,
            ),
            "success",
            id="all-committed-after-a-pending-record",
        ),
    ],
)
def test_a_superseded_job_record_says_nothing(facts: RunFacts, state: str) -> None:
    decided = decide_state(facts, now=NOW)
    assert (decided.state, decided.job_status, decided.message) == (state, None, None)
