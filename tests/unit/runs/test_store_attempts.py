"""Run-store repair bookkeeping: attempt files, manifest replace, repair records
(the repair lease: test_lease.py)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.runs.attempts import (
    repair_record,
    repair_records,
    write_repair,
)
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

ROWS_1 = [("present", None, 1), ("failed", "doc[1]: x", None)]
ROWS_2 = [("present", None, 1), ("present", None, 7)]


def _commit(store: RunStore, rows, attempt: int) -> None:
    uri = store.write_outputs("r", 0, "out", 0, rows, attempt=attempt)
    store.commit_microbatch("r", 0, {"attempt": attempt, "files": {"out": uri}})


def test_an_attempt_writes_its_own_folder_and_the_manifest_picks_it(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path))
    _commit(store, ROWS_1, 1)
    assert [r["value"] for r in store.read_outputs("r")] == [1, None]
    uri = store.write_outputs("r", 0, "out", 0, ROWS_2, attempt=2)
    assert uri.endswith("mb-00000/attempt-2/out.parquet")
    # files written, manifest not yet replaced: readers still see attempt 1
    assert [r["value"] for r in store.read_outputs("r")] == [1, None]
    store.commit_microbatch("r", 0, {"attempt": 2, "files": {"out": uri}})
    assert [r["value"] for r in store.read_outputs("r")] == [1, 7]
    assert (tmp_path / "r" / "outputs" / "mb-00000" / "out.parquet").exists()  # kept


def test_the_manifest_replace_leaves_no_partial_file(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path))
    _commit(store, ROWS_1, 1)
    _commit(store, ROWS_2, 2)
    files = sorted(p.name for p in (tmp_path / "r" / "manifests").iterdir())
    assert files == ["mb-00000.json"]
    assert json.loads((tmp_path / "r" / "manifests" / "mb-00000.json").read_text())["attempt"] == 2


def test_explicit_source_ids_are_written(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path))
    store.write_outputs("r", 0, "out", 0, ROWS_2, sources=[5, 9])
    store.commit_microbatch("r", 0, {})
    assert [r["source"] for r in store.read_outputs("r")] == [5, 9]


@pytest.mark.parametrize("status", ["running", "committed"])
def test_repair_records_round_trip(tmp_path: Path, status: str) -> None:
    store = RunStore(str(tmp_path))
    assert [r.to_dict() for r in repair_records(store, "r")] == []
    write_repair(store, "r", 3, attempt=2, job_id="j", status=status, owner="ti")
    record = plain(repair_record(store, "r", 3))
    assert record["status"] == status
    assert record["job_id"] == "j"
    assert [r["index"] for r in [r.to_dict() for r in repair_records(store, "r")]] == [3]


def test_a_repair_record_never_holds_a_token(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path))
    write_repair(store, "r", 0, status="failed", message="401: Authorization: Bearer s3cr3t")
    text = (tmp_path / "r" / "repairs" / "mb-00000.json").read_text()
    assert "s3cr3t" not in text
    assert "[redacted]" in text
