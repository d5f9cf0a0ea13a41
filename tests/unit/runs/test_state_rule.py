"""The run-state rule of runs.state_rule, case by case (pure: facts and a clock in)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from airflow_provider_rayorch.runs.job_status import JobStatus
from airflow_provider_rayorch.runs.records import JobStateRecord
from airflow_provider_rayorch.runs.state_rule import STALE_AFTER, RunFacts, decide_state

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
RECENT = NOW - timedelta(minutes=5)
OLD = NOW - STALE_AFTER - timedelta(minutes=1)


def _record(status: str, at: datetime, message: str | None = "why") -> JobStateRecord:
    return JobStateRecord(job_status=JobStatus(status), message=message, at=at.isoformat())


def _facts(
    job: str | None = None,
    at: datetime = RECENT,
    *,
    last: datetime | None = OLD,
    manifest: str | None = None,
    committed: str | None = None,
) -> RunFacts:
    """The facts of a run with a plan: its job-state record (``job`` written ``at``), its
    last write, its run manifest's state and the counts' state once all committed."""
    record = None if job is None else _record(job, at)
    return RunFacts(True, manifest, committed, job_state=record, last_write=last)


#: case -> (facts, the state decided, the job status shown)
STATES: dict[str, tuple[RunFacts, str, str | None]] = {
    "run-manifest-wins": (_facts("FAILED", manifest="success"), "success", "FAILED"),
    "never-started": (_facts("NOT_STARTED"), "not_started", "NOT_STARTED"),
    "stopped-long-ago-stays-stopped": (_facts("STOPPED", OLD), "stopped", "STOPPED"),
    # superseded by a later commit: neither its status nor its message shows
    "failed-record-of-an-earlier-attempt": (_facts("FAILED", OLD, last=RECENT), "running", None),
    "all-committed-no-manifest-yet": (_facts(committed="failed", last=RECENT), "failed", None),
    "succeeded-without-run-manifest": (_facts("SUCCEEDED"), "unknown", "SUCCEEDED"),
    "job-pending": (_facts("PENDING"), "pending", "PENDING"),
    "job-running-recently-seen": (_facts("RUNNING"), "running", "RUNNING"),
    "running-record-gone-stale": (_facts("RUNNING", OLD), "unknown", "RUNNING"),
    "no-record-recent": (_facts(last=RECENT), "running", None),
    "no-record-stale": (_facts(), "unknown", None),
    "no-plan": (RunFacts(False), "unknown", None),
}


@pytest.mark.parametrize(("facts", "state", "job_status"), STATES.values(), ids=STATES.keys())
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


# -- a finished run never says it is running ------------------------------------------

#: case -> (facts, the state decided): a job record older or newer than the run's end
SUPERSEDED: dict[str, tuple[RunFacts, str]] = {
    "submit-record-older-than-the-run-manifest": (
        _facts("RUNNING", OLD, last=RECENT, manifest="success"),
        "success",
    ),
    "failed-run-submit-record": (_facts("RUNNING", OLD, last=RECENT, manifest="failed"), "failed"),
    # a poller saw the job RUNNING in the seconds between the driver's run manifest and
    # its exit: the run manifest is the driver's last word, the run has ended
    "heartbeat-after-the-run-manifest": (_facts("RUNNING", manifest="success"), "success"),
    "all-committed-after-a-pending-record": (
        _facts("PENDING", OLD, last=RECENT, committed="success"),
        "success",
    ),
}


@pytest.mark.parametrize(("facts", "state"), SUPERSEDED.values(), ids=SUPERSEDED.keys())
def test_a_superseded_job_record_says_nothing(facts: RunFacts, state: str) -> None:
    decided = decide_state(facts, now=NOW)
    assert (decided.state, decided.job_status, decided.message) == (state, None, None)
