"""The run-state record: the driver owns it, and a run reads as what it is
(running, succeeded, failed with its cause, never started, stopped, killed mid-run)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from airflow_provider_rayorch.runs import driver
from airflow_provider_rayorch.runs.run_state import (
    STALE_AFTER,
    RunStateRecord,
    read_run_state,
    read_run_state_record,
    record_job_ended,
    record_not_started,
    record_stopped,
    recorded_job_status,
    write_run_state,
)
from airflow_provider_rayorch.runs.store import RunStore, StoreError
from tests.unit.runs.plans import write_fake_plan

pytestmark = pytest.mark.timeout(30)


def _state(store: RunStore, **kw) -> tuple[str, str | None]:
    state = read_run_state(store, "run", **kw)
    return state.state, state.job_status


def test_the_driver_records_running_at_each_commit_then_its_end(tmp_path, fake_engine) -> None:
    store = write_fake_plan(tmp_path, n=6, size=2)
    seen: list[tuple[str, int, int]] = []

    def on_commit() -> None:
        record = read_run_state_record(store, "run")
        assert record is not None
        seen.append((record.state, record.committed, record.total))
        assert _state(store) == ("running", "RUNNING")

    driver.run_plan(store, "run", on_commit=on_commit)
    assert seen == [("running", 1, 3), ("running", 2, 3), ("running", 3, 3)]
    record = read_run_state_record(store, "run")
    assert (record.state, record.writer, record.committed) == ("succeeded", "driver", 3)
    assert _state(store) == ("success", "SUCCEEDED")
    assert recorded_job_status(store, "run") == "SUCCEEDED"


def test_a_driver_that_fails_before_any_commit_records_the_cause(
    tmp_path, fake_engine, monkeypatch
) -> None:
    store = write_fake_plan(tmp_path, n=4, size=2)
    monkeypatch.setattr(fake_engine.FakeExecutor, "crash_after", 0)
    with pytest.raises(fake_engine.CrashAfter):
        driver.run_plan(store, "run")
    state = read_run_state(store, "run")
    assert (state.state, state.job_status) == ("failed", "FAILED")
    assert "CrashAfter" in (state.message or "")


def test_a_job_that_never_started_reads_not_started(tmp_path) -> None:
    store = write_fake_plan(tmp_path)
    record_not_started(store, "run", "submit failed: HTTP 500 No available agent")
    state = read_run_state(store, "run")
    assert (state.state, state.job_status) == ("not_started", "NOT_STARTED")
    assert state.message == "submit failed: HTTP 500 No available agent"
    assert recorded_job_status(store, "run") == "NOT_STARTED"


def test_the_tasks_never_write_over_a_drivers_end(tmp_path) -> None:
    store = write_fake_plan(tmp_path)
    write_run_state(store, "run", "failed", "ValueError: boom")
    record_not_started(store, "run", "job ended FAILED")
    record_stopped(store, "run", "task killed")
    record_job_ended(store, "run", _status("FAILED"), "job ended FAILED")
    record = read_run_state_record(store, "run")
    assert (record.state, record.reason, record.writer) == ("failed", "ValueError: boom", "driver")


def _status(value: str):
    from airflow_provider_rayorch.runs.job_status import JobStatus

    return JobStatus.parse(value)


def test_a_stopped_job_reads_stopped(tmp_path) -> None:
    store = write_fake_plan(tmp_path)
    write_run_state(store, "run", "running")
    record_stopped(store, "run", "Ray job j was stopped: its Airflow task was killed")
    assert _state(store) == ("stopped", "STOPPED")


def test_a_driver_killed_mid_run_reads_failed_once_its_job_ended(tmp_path) -> None:
    store = write_fake_plan(tmp_path)
    write_run_state(store, "run", "running", committed=1, total=3)
    assert _state(store) == ("running", "RUNNING")
    # a caller that just read Ray's status: the job is gone
    assert _state(store, job_status="FAILED") == ("failed", "FAILED")
    assert _state(store, job_status="MISSING")[0] == "failed"
    # the task watching the job records the end the driver could not
    record_job_ended(store, "run", _status("FAILED"), "Ray job j ended FAILED: OOM killed")
    state = read_run_state(store, "run")
    assert (state.state, state.job_status) == ("failed", "FAILED")
    assert "without recording its end" in (state.message or "")
    assert "OOM killed" in (state.message or "")


def test_a_record_nobody_refreshed_for_long_reads_unknown(tmp_path) -> None:
    store = write_fake_plan(tmp_path)
    write_run_state(store, "run", "running")
    later = datetime.now(UTC) + STALE_AFTER + timedelta(minutes=1)
    state = read_run_state(store, "run", now=later)
    assert state.state == "unknown"
    assert "recorded nothing since" in (state.message or "")


def test_a_job_submitted_after_the_record_reads_as_on_its_way(tmp_path) -> None:
    from airflow_provider_rayorch.common.liveness import record_submitted

    store = write_fake_plan(tmp_path)
    record = RunStateRecord(
        state="failed",
        reason="the earlier try failed",
        updated_at=(datetime.now(UTC) - timedelta(minutes=10)).isoformat(),
    )
    store.write_record(("run", "run_state.json"), record)
    record_submitted(store, "run", "job-2")
    assert read_run_state(store, "run").state == "running"


def test_the_record_has_a_schema_version_and_refuses_a_newer_one(tmp_path) -> None:
    store = write_fake_plan(tmp_path)
    write_run_state(store, "run", "running", "started")
    path = tmp_path / "run" / "run_state.json"
    data = json.loads(path.read_text())
    assert data["schema_version"] == 1
    assert set(data) >= {"state", "reason", "updated_at", "writer"}
    path.write_text(json.dumps({**data, "schema_version": 2}))
    with pytest.raises(StoreError, match="schema version 2"):
        read_run_state_record(store, "run")
    # a damaged record never hides the run: the state says why it cannot be read
    assert "schema version 2" in (read_run_state(store, "run").message or "")


def test_a_reason_never_holds_a_credential(tmp_path) -> None:
    store = write_fake_plan(tmp_path)
    write_run_state(store, "run", "failed", "HTTP 401: Authorization: Bearer s3cr3t-token")
    assert "s3cr3t" not in (tmp_path / "run" / "run_state.json").read_text()
