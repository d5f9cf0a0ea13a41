"""The run aggregate record is read instead of run.json's listing and the manifests
only while it is current (run.json as it was written with it, no repair committed
since), and the aggregate it restores shows the run but takes no commit."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.runs import paths
from airflow_provider_rayorch.runs.aggregate import RunAggregate
from airflow_provider_rayorch.runs.aggregate_record import (
    read_aggregate_record,
    restored_aggregate,
)
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.records import RepairRecord
from airflow_provider_rayorch.runs.run_manifest import (
    rewrite_repaired_run_manifest,
    write_run_manifest,
)
from airflow_provider_rayorch.runs.run_state import read_run_state, run_manifest_head
from airflow_provider_rayorch.runs.store import RunStore

from ..reports.counting_fs import counting
from .test_aggregate import _manifest, _plan

if TYPE_CHECKING:
    from pathlib import Path

FIGURES = {"elapsed_s": 3.0, "pipeline": "m:P", "fingerprint": "f", "max_failed_ratio": 0.5}


def _finished(root: Path) -> tuple[RunStore, RunAggregate]:
    store = RunStore(str(root))
    plan = store.write_plan(_plan(6, ratio=0.5))
    manifests = [_manifest(i, failed=int(i == 2)) for i in range(6)]
    for m in manifests:
        store.commit_microbatch("run", m.microbatch.index, plain(m))  # type: ignore[union-attr]
    agg = RunAggregate.of(plan, manifests)
    write_run_manifest(store, "run", aggregate=agg, **FIGURES)  # type: ignore[arg-type]
    return store, agg


def test_the_record_is_current_until_run_json_changes_or_a_repair_commits(
    tmp_path: Path,
) -> None:
    store, _ = _finished(tmp_path)
    record = read_aggregate_record(store, "run")
    assert record is not None
    assert record.committed == 6
    assert "microbatches" not in record.head
    head = run_manifest_head(store, "run")
    assert head is not None
    assert head.sources is not None
    assert (head.state, head.sources.failed) == ("success", 1)

    store.write_run_manifest("run", {"state": "failed", "elapsed_s": 99.0})  # another writer
    assert read_aggregate_record(store, "run") is None
    head = run_manifest_head(store, "run")
    assert head is not None
    assert (head.state, head.elapsed_s) == ("failed", 99.0)

    write_run_manifest(store, "run", **FIGURES)  # type: ignore[arg-type]
    assert read_aggregate_record(store, "run") is not None
    repaired = plain(_manifest(2)) | {"attempt": 2}
    store.commit_microbatch("run", 2, repaired)
    store.write_record(paths.repair("run", 2), RepairRecord(index=2, attempt=2, status="committed"))
    assert read_aggregate_record(store, "run") is None  # until run.json is rewritten

    store.clear_run_manifest("run")  # a resumed run
    assert read_aggregate_record(store, "run") is None
    assert run_manifest_head(store, "run") is None


def test_a_restored_aggregate_shows_the_run_and_takes_no_commit(tmp_path: Path) -> None:
    store, agg = _finished(tmp_path)
    record = read_aggregate_record(store, "run")
    assert record is not None
    plan = store.read_plan("run")
    assert plan is not None
    restored = restored_aggregate(plan, record)
    assert restored.totals == agg.totals
    assert restored.report_rows() == agg.report_rows()
    assert {k: b.committed for k, b in restored.bins.items()} == {
        k: b.committed for k, b in agg.bins.items() if b.committed
    }
    with pytest.raises(UsageError, match="takes no commit"):
        restored.add(_manifest(0))
    with pytest.raises(UsageError, match="sums no run manifest"):
        restored.run_summary(run_id="run", outputs_uri=None, **FIGURES)  # type: ignore[arg-type]


def test_a_repaired_runs_state_reads_the_repaired_manifests_not_every_one(
    tmp_path: Path,
) -> None:
    store, _ = _finished(tmp_path)
    history = [
        {"attempt": 1, "state": "failed"},
        {"attempt": 2, "kind": "repair", "state": "success"},
    ]
    store.commit_microbatch("run", 2, plain(_manifest(2)) | {"attempt": 2, "attempts": history})
    store.write_record(paths.repair("run", 2), RepairRecord(index=2, attempt=2, status="committed"))
    rewrite_repaired_run_manifest(store, "run", 0.5)
    handler = counting(store)
    state = read_run_state(store, "run")
    assert state.state == "success"
    assert state.message == "repairs: mb 2 attempt 2 success"
    manifests = [p for p in handler.opened if f"/{paths.MANIFESTS}/" in p]
    assert [p.rsplit("/", 1)[-1] for p in manifests] == ["mb-00002.json"]
    assert not [p for p in handler.opened if p.endswith(paths.RUN_MANIFEST_FILE)]
