"""The source listing: written lazily per microbatch, read per microbatch, exact values."""

from __future__ import annotations

import json
import pathlib
import shutil
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from airflow_provider_rayorch.runs import sources as listing_module
from airflow_provider_rayorch.runs.sources import source_columns, write_listing
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore, StoreError

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.timeout(60)
FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def _plan(sources: list[Any], size: int | None, n_columns: int = 1) -> PlanRecord:
    return PlanRecord(
        run_id="r",
        pipeline="m:F",
        fingerprint="f" * 64,
        sources=sources,
        input_batch_size=size,
        n_columns=n_columns,
    )


def test_a_listing_is_written_while_its_rows_are_produced(tmp_path, monkeypatch) -> None:
    store = RunStore(str(tmp_path))
    monkeypatch.setattr(listing_module, "ROW_GROUP", 4)
    first_file = tmp_path / "r" / "sources"
    seen_at_row_25: list[int] = []

    def rows() -> Iterator[str]:
        for i in range(100):
            if i == 25:  # microbatch 1 (rows 10..19) is complete on disk by now
                (done,) = first_file.glob("*/mb-00001.parquet")
                seen_at_row_25.append(pq.read_table(done).num_rows)
            yield f"gs://b/{i:03d}"

    listing = write_listing(store, "r", rows(), batch_size=10, strings=True)

    assert listing.total == 100
    assert seen_at_row_25 == [10]
    folder = first_file / listing.name
    assert sorted(p.name for p in folder.iterdir())[-1] == "mb-00009.parquet"
    # ...and holds row groups of at most ROW_GROUP rows: never the whole listing
    groups = pq.ParquetFile(folder / "mb-00000.parquet").metadata
    assert [groups.row_group(g).num_rows for g in range(groups.num_row_groups)] == [4, 4, 2]


@pytest.mark.parametrize(
    ("sources", "n_columns"),
    [
        pytest.param([f"s3://b/{i}.pdf" for i in range(7)], 1, id="uris"),
        pytest.param([1, "1", 2.5, None, True, {"k": [1, "x"]}, [3]], 1, id="json-values"),
        pytest.param([["s3://b/a", 1], ["s3://b/b", {"p": 2}], ["c", None]], 2, id="two-columns"),
    ],
)
def test_sources_read_back_per_microbatch_as_given(tmp_path, sources, n_columns) -> None:
    store = RunStore(str(tmp_path))
    plan = store.write_plan(_plan(sources, size=2, n_columns=n_columns))

    assert "sources" not in json.loads((tmp_path / "r" / "plan.json").read_text())
    again = store.read_plan("r")
    assert again is not None
    assert again.total_sources == len(sources)
    assert list(store.iter_sources(again)) == sources
    assert again.rows == sources
    first = store.read_sources(again, 1)
    rows = first[0] if n_columns == 1 else [list(r) for r in zip(*first, strict=True)]
    assert rows == sources[2:4]
    columns = source_columns(store, plan)
    assert [list(c) for c in columns] == plan_columns(sources, n_columns)


def plan_columns(sources: list[Any], n_columns: int) -> list[list[Any]]:
    return _plan(sources, 2, n_columns).columns()


def test_source_columns_read_one_microbatch_at_a_time(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    plan = store.write_plan(_plan([f"u{i}" for i in range(50)], size=10))
    (column,) = source_columns(store, plan)

    assert len(column) == 50
    assert [column[i] for i in range(30, 40)] == [f"u{i}" for i in range(30, 40)]
    assert column._chunks.reads == 1  # one microbatch's file for its ten rows
    assert column[-1] == "u49"


def test_a_version_1_plan_written_by_0_1_0_still_reads(tmp_path) -> None:
    (tmp_path / "v1run").mkdir()
    shutil.copy(FIXTURES / "plan_v1.json", tmp_path / "v1run" / "plan.json")
    store = RunStore(str(tmp_path))

    plan = store.read_plan("v1run")

    assert plan is not None
    assert plan.version == 1
    assert plan.total_sources == 3
    assert [m["count"] for m in plan.microbatches()] == [2, 1]
    assert store.read_sources(plan, 1) == [["s3://b/c.pdf"], [None]]
    assert [list(c) for c in source_columns(store, plan)] == [
        ["s3://b/a.pdf", "s3://b/b.pdf", "s3://b/c.pdf"],
        [1, {"pages": [1, 2]}, None],
    ]


def test_a_missing_or_newer_listing_fails_naming_it(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    plan = store.write_plan(_plan(["a", "b", "c"], size=2))
    path = tmp_path / "r" / "sources" / plan.listing / "mb-00001.parquet"
    table = pq.read_table(path)
    meta = {b"rayorch.source_listing": b'{"version": 9, "columns": ["string"]}'}
    pq.write_table(table.replace_schema_metadata(meta), path)
    with pytest.raises(StoreError, match=r"mb-00001\.parquet has schema version 9"):
        store.read_sources(plan, 1)
    path.unlink()
    with pytest.raises(StoreError, match=r"mb-00001\.parquet of run r is missing"):
        store.read_sources(plan, 1)


def test_a_newer_plan_record_fails_saying_which_versions_read(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    store.write_plan(_plan(["a"], size=None))
    plan_file = tmp_path / "r" / "plan.json"
    plan_file.write_text(json.dumps({**json.loads(plan_file.read_text()), "version": 3}))
    with pytest.raises(
        StoreError, match="version 3; this airflow-provider-rayorch reads version 1 and 2"
    ):
        store.read_plan("r")


def test_a_resumed_driver_reads_the_listing_of_pending_microbatches_only(
    tmp_path, monkeypatch
) -> None:
    from airflow_provider_rayorch import job
    from airflow_provider_rayorch.runs import driver, pipeline_load

    factory = pipeline_load.import_factory("engine_pipelines:TwoColumns")
    fingerprint = factory().compile().fingerprint
    store = RunStore(str(tmp_path))
    store.write_plan(
        PlanRecord(
            run_id="run",
            pipeline="engine_pipelines:TwoColumns",
            fingerprint=fingerprint,
            sources=[[i, f"s{i}"] for i in range(9)],
            n_columns=2,
            input_batch_size=3,
            backend="local",
        )
    )
    read: list[int] = []
    real = listing_module.read_listing

    def counted(store: RunStore, plan: PlanRecord, index: int) -> list[list[Any]]:
        read.append(index)
        return real(store, plan, index)

    monkeypatch.setattr(listing_module, "read_listing", counted)
    driver.run_plan(store, "run", report=job.write_report)
    assert sorted(read) == [0, 1, 2]  # each microbatch's file once

    (tmp_path / "run" / "manifests" / "mb-00001.json").unlink()
    read.clear()
    summary = driver.run_plan(store, "run", report=job.write_report)

    assert read == [1]
    assert summary["sources"]["present"] == 9
    assert [r["value"] for r in store.read_outputs("run")][3:6] == ["3-s3", "4-s4", "5-s5"]
