"""Reads cost what they return: one microbatch's outputs, a run's state."""

from __future__ import annotations

from typing import Any

import pyarrow.parquet as pq
import pytest

from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.run_state import read_run_state
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore, read_summary_outputs
from benchmarks.store_reads import commit_present_microbatch

pytestmark = pytest.mark.timeout(60)


class FileReads:
    """Records every file the run store opens for reading (records and Parquet)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        self.data: list[bytes] = []
        read_bytes = RunStore.read_bytes
        read_table = pq.read_table
        parquet_file = pq.ParquetFile

        def counted_bytes(store: RunStore, parts: Any) -> bytes | None:
            self.paths.append("/".join(parts))
            data = read_bytes(store, parts)
            self.data.append(data or b"")
            return data

        def counted_table(source: Any, *args: Any, **kwargs: Any) -> Any:
            self.paths.append(str(source))
            return read_table(source, *args, **kwargs)

        def counted_file(source: Any, *args: Any, **kwargs: Any) -> Any:
            self.paths.append(str(getattr(source, "path", source)))
            return parquet_file(source, *args, **kwargs)

        monkeypatch.setattr(RunStore, "read_bytes", counted_bytes)
        monkeypatch.setattr(pq, "read_table", counted_table)
        monkeypatch.setattr(pq, "ParquetFile", counted_file)

    def matching(self, word: str) -> list[str]:
        return [p for p in self.paths if word in p]


def _committed_run(store: RunStore, run_id: str, n: int, size: int) -> list[dict[str, Any]]:
    """A run of ``n`` sources in microbatches of ``size``, every one committed; returns
    the microbatch manifests."""
    store.write_plan(
        PlanRecord(
            run_id=run_id,
            pipeline="m:F",
            fingerprint="f" * 64,
            sources=[f"s3://b/in/{i:06d}.pdf" for i in range(n)],
            input_batch_size=size,
        )
    )
    manifests = []
    for index, first in enumerate(range(0, n, size)):
        commit_present_microbatch(store, run_id, index, first, min(size, n - first))
        manifests.append(plain(store.manifest_record(run_id, index)))
    return manifests


def test_a_microbatch_summary_reads_only_that_microbatch(tmp_path, monkeypatch) -> None:
    store = RunStore(str(tmp_path))
    manifests = _committed_run(store, "r", n=40, size=10)
    reads = FileReads(monkeypatch)

    rows = read_summary_outputs(manifests[2])

    assert [r["value"] for r in rows] == list(range(20, 30))
    opened = reads.matching("outputs/")
    assert opened
    assert all("mb-00002" in p for p in opened), opened
    assert not [p for p in reads.matching("manifests/") if "mb-00002" not in p]


def test_a_run_state_reads_no_source_row(tmp_path, monkeypatch) -> None:
    store = RunStore(str(tmp_path))
    _committed_run(store, "r", n=40, size=10)
    reads = FileReads(monkeypatch)

    state = read_run_state(store, "r")

    assert state.state == "success"
    assert reads.matching("plan.json")
    assert not reads.matching("sources/")
    assert not [d for d in reads.data if b"s3://b/in/" in d]
