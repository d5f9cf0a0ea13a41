"""The one job watch: a table of job status and store facts to observation, and its
driver over a real run store."""

from __future__ import annotations

import pytest

from airflow_provider_rayorch.common.job_watch import (
    JobWatch,
    StoreFacts,
    job_reading,
    observe,
)
from airflow_provider_rayorch.common.states import JobStatus
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.records import MicrobatchManifest, RunManifest
from airflow_provider_rayorch.runs.store import RunStore

pytestmark = pytest.mark.timeout(60)

SOURCES = {"total": 1, "present": 1, "dropped": 0, "failed": 0, "suppressed": 0}
RUN = {"run_id": "r", "state": "success", "sources": SOURCES, "failures": []}
MB = {**RUN, "microbatch": {"index": 0, "first_source": 0, "count": 1}}
RUN_RECORD = RunManifest.model_validate(RUN)
MB_RECORD = MicrobatchManifest.model_validate(MB)
S = JobStatus


@pytest.mark.parametrize(
    ("status", "facts", "microbatch", "ended", "succeeded"),
    [
        pytest.param(S.PENDING, StoreFacts(0), False, False, False, id="run-pending"),
        pytest.param(
            S.RUNNING, StoreFacts(2, RUN_RECORD), False, False, False, id="run-manifest-job-running"
        ),
        pytest.param(S.SUCCEEDED, StoreFacts(3, RUN_RECORD), False, True, True, id="run-succeeded"),
        pytest.param(
            S.SUCCEEDED, StoreFacts(3), False, True, False, id="run-succeeded-no-manifest"
        ),
        pytest.param(
            S.MISSING, StoreFacts(None, RUN_RECORD), False, True, True, id="run-head-gone-manifest"
        ),
        pytest.param(S.MISSING, StoreFacts(), False, True, False, id="run-head-gone-no-manifest"),
        pytest.param(
            S.FAILED, StoreFacts(1, RUN_RECORD), False, True, False, id="run-failed-after-manifest"
        ),
        pytest.param(S.STOPPED, StoreFacts(1), False, True, False, id="run-stopped"),
        pytest.param(None, StoreFacts(), False, False, False, id="run-no-job"),
        pytest.param(
            S.RUNNING, StoreFacts(None, MB_RECORD), True, True, True, id="mb-committed-job-running"
        ),
        pytest.param(None, StoreFacts(None, MB_RECORD), True, True, True, id="mb-committed-no-job"),
        pytest.param(S.RUNNING, StoreFacts(), True, False, False, id="mb-waiting"),
        pytest.param(None, StoreFacts(), True, False, False, id="mb-waiting-no-job"),
        pytest.param(S.SUCCEEDED, StoreFacts(), True, True, False, id="mb-job-ended-without-it"),
        pytest.param(
            S.FAILED, StoreFacts(None, MB_RECORD), True, True, True, id="mb-committed-job-failed"
        ),
    ],
)
def test_observe(status, facts, microbatch, ended, succeeded) -> None:
    seen = observe(status, facts, message="why", microbatch=microbatch)
    assert (seen.ended, seen.succeeded) == (ended, succeeded)
    assert seen.status is status
    assert seen.committed == facts.committed
    if succeeded and not microbatch:
        assert seen.manifest is not None
        # the status read, never SUCCEEDED by default (common.states.with_job_status)
        assert plain(seen.manifest)["job_status"] == status.value


@pytest.mark.parametrize(
    ("status", "succeeded"),
    [
        pytest.param(S.SUCCEEDED, True, id="succeeded"),
        pytest.param(S.MISSING, False, id="head-gone-manifest-may-predate-the-job"),
    ],
)
def test_a_caller_whose_manifest_may_predate_the_job_trusts_only_succeeded(
    status, succeeded
) -> None:
    seen = observe(status, StoreFacts(1, RUN_RECORD), job_must_succeed=True)
    assert seen.ended
    assert seen.succeeded is succeeded


def test_a_run_manifest_keeps_its_own_job_status() -> None:
    """The operator used to overwrite it with SUCCEEDED; with_job_status keeps it."""
    manifest = RunManifest.model_validate({**RUN, "job_status": "STOPPED"})
    seen = observe(S.SUCCEEDED, StoreFacts(1, manifest))
    assert seen.manifest is not None
    assert plain(seen.manifest)["job_status"] == "STOPPED"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(None, (S.MISSING, "the cluster does not know job j"), id="unknown-job"),
        pytest.param({"status": "FAILED", "message": "oom"}, (S.FAILED, "oom"), id="job-info"),
        pytest.param({"status": "RUNNING", "message": None}, (S.RUNNING, ""), id="no-message"),
        pytest.param("succeeded", (S.SUCCEEDED, ""), id="status-text"),
        pytest.param(S.PENDING, (S.PENDING, ""), id="status"),
    ],
)
def test_job_reading(raw, expected) -> None:
    assert job_reading(raw, "j") == expected


def _store(tmp_path, *, committed: int = 0, run_manifest: bool = False) -> RunStore:
    store = RunStore(str(tmp_path))
    for index in range(committed):
        mb = {"index": index, "first_source": index, "count": 1}
        store.commit_microbatch("r", index, {**MB, "microbatch": mb})
    if run_manifest:
        store.write_run_manifest("r", dict(RUN))
    return store


def test_the_sync_driver_reads_the_job_then_the_store_and_writes_nothing(tmp_path) -> None:
    store = _store(tmp_path, committed=2)
    watch = JobWatch(
        store=store, run_id="r", job_id="j", read_job=lambda: {"status": "RUNNING"},
        interval=0.0, count_commits=True,
    )  # fmt: skip
    seen = watch.look()
    assert (seen.status, seen.committed, seen.ended) == (S.RUNNING, 2, False)
    assert store.job_state_record("r") is None  # the driver owns the run's records
    assert watch.last_read == {"status": "RUNNING"}


def test_a_committed_microbatch_ends_the_watch_without_asking_ray(tmp_path) -> None:
    store = _store(tmp_path, committed=1)

    def never() -> None:
        raise AssertionError("the job must not be read once the microbatch committed")

    seen = JobWatch(
        store=store, run_id="r", job_id="j", read_job=never, interval=0.0, index=0
    ).look()
    assert seen.succeeded
    assert seen.manifest is not None
    assert plain(seen.manifest)["microbatch"]["index"] == 0
