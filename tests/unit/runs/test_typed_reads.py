"""The run store hands its callers typed records: manifests, the run manifest, the
job-state record and repair records read as their models, and the summary views
(what XCom and ``read_summary_outputs`` use) are those records as JSON values."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs.aggregate import RunAggregate
from airflow_provider_rayorch.runs.attempts import (
    repair_record,
    repair_records,
    write_repair,
)
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.history import attempt_rows, stale_run_manifest
from airflow_provider_rayorch.runs.job_status import JobStatus
from airflow_provider_rayorch.runs.records import (
    JobStateRecord,
    MicrobatchManifest,
    PlanRecord,
    RepairRecord,
    RunManifest,
)
from airflow_provider_rayorch.runs.store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

_MANIFEST = {
    "run_id": "run",
    "state": "failed",
    "microbatch": {"index": 2, "first_source": 4, "count": 2},
    "sources": {"total": 2, "present": 1, "dropped": 0, "failed": 1, "suppressed": 0},
    "outputs": {"uri": "x", "rows": 1, "ports": ["out", "aux"]},
    "attempt": 3,
}


def test_a_manifest_reads_as_its_record(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path))
    store.commit_microbatch("run", 2, _MANIFEST)
    record = store.manifest_record("run", 2)
    assert isinstance(record, MicrobatchManifest)
    assert record.microbatch is not None
    assert record.sources is not None
    assert record.outputs is not None
    assert (record.microbatch.first_source, record.sources.failed, record.attempt) == (4, 1, 3)
    assert record.outputs.ports == ["out", "aux"]
    assert store.manifest_records("run") == [record]
    assert store.manifest_record("run", 0) is None


def test_the_run_manifest_and_job_state_read_as_records(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path))
    assert store.run_manifest_record("run") is None
    assert store.job_state_record("run") is None
    store.write_run_manifest("run", {"run_id": "run", "state": "success", "elapsed_s": 2.5})
    store.write_job_state("run", "SUCCEEDED", "done")
    run = store.run_manifest_record("run")
    job = store.job_state_record("run")
    assert isinstance(run, RunManifest)
    assert run.elapsed_s == 2.5
    assert isinstance(job, JobStateRecord)
    assert job.job_status is JobStatus.SUCCEEDED


def test_repair_records_read_typed_and_feed_the_attempt_history(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path))
    write_repair(store, "run", 3, attempt=2, job_id="j", status="refused", message="why")
    write_repair(store, "run", 1, attempt=2, job_id="k", status="running")
    records = repair_records(store, "run")
    assert all(isinstance(r, RepairRecord) for r in records)
    assert [(r.index, r.status) for r in records] == [(1, "running"), (3, "refused")]
    assert repair_record(store, "run", 3) == records[1]
    rows = attempt_rows({}, records)
    assert [(r.index, r.attempt, r.state, r.message) for r in rows] == [
        (1, 2, "running", ""),
        (3, 2, "refused", "why"),
    ]


def test_a_run_manifest_older_than_a_repaired_manifest_reads_as_stale(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path))
    store.commit_microbatch("run", 2, _MANIFEST)  # committed attempt 3
    entry = {"index": 2, "first_source": 4, "count": 2, "state": "failed"}
    store.write_run_manifest("run", {"run_id": "run", "microbatches": [{**entry, "attempt": 2}]})
    run = store.run_manifest_record("run")
    assert run is not None
    assert stale_run_manifest(run, store.manifest_records("run"))
    store.write_run_manifest("run", {"run_id": "run", "microbatches": [{**entry, "attempt": 3}]})
    run = store.run_manifest_record("run")
    assert run is not None
    assert not stale_run_manifest(run, store.manifest_records("run"))


def test_a_commit_returns_its_record_and_the_live_aggregate_counts_records(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path))
    committed = store.commit_microbatch("run", 2, {**_MANIFEST, "sample": {"out": []}})
    assert committed == store.manifest_record("run", 2)
    plan = PlanRecord(run_id="run", pipeline="m:P", fingerprint="f", sources=list(range(6)))
    aggregate = RunAggregate.of(plan, store.manifest_records("run"))
    mb = aggregate.bins[2]
    assert (mb.index, mb.first_source, mb.count, mb.attempt, mb.state) == (2, 4, 2, 3, "failed")
    assert aggregate.totals["failed"] == 1
    assert aggregate.ports == ["out", "aux"]


def test_the_aggregate_refuses_a_manifest_that_names_no_microbatch(tmp_path: Path) -> None:
    plan = PlanRecord(run_id="run", pipeline="m:P", fingerprint="f", sources=[1])
    nameless = MicrobatchManifest.model_validate({"run_id": "run", "state": "success"})
    with pytest.raises(StoreError, match="names no microbatch"):
        RunAggregate.of(plan, [nameless])


def test_plain_is_the_record_as_json_values_and_keeps_none() -> None:
    record = MicrobatchManifest.model_validate(_MANIFEST)
    assert plain(record) == record.to_dict() == {k: _MANIFEST[k] for k in sorted(_MANIFEST)}
    assert plain(None) is None
