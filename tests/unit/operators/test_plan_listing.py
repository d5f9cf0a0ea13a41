"""The run task writes its sources as a listing while a glob is listed, then the plan."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_rayorch.common.sources import stream_sources
from airflow_provider_rayorch.exceptions import RayOrchPlanChanged
from airflow_provider_rayorch.operators import _common
from airflow_provider_rayorch.runs.globbing import iter_glob_uris
from airflow_provider_rayorch.runs.store import RunStore

if TYPE_CHECKING:
    import pathlib

pytestmark = pytest.mark.timeout(60)


def _prepare(store: RunStore, sources: Any, **options: Any) -> Any:
    rows, n_columns, strings = stream_sources(sources)
    return _common.prepare_plan(
        store=store,
        run_id="r",
        spec="m:F",
        pipeline_kwargs={},
        fingerprint="f" * 64,
        sources=rows,
        input_batch_size=options.pop("input_batch_size", 3),
        max_active_input_batches=1,
        max_failed_ratio=0.0,
        backend="local",
        on_plan_change=options.pop("on_plan_change", "fail"),
        n_columns=n_columns,
        strings=strings,
    )


def _landing(folder: pathlib.Path, names: list[str]) -> None:
    for name in names:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)


def test_a_glob_is_walked_folder_by_folder_in_uri_order(tmp_path) -> None:
    names = ["b.txt", "b/x.txt", "b-/y.txt", "a.txt", "b0.txt", "c/d/e.txt", "c.txt"]
    _landing(tmp_path / "in", names)
    found = list(iter_glob_uris(f"{tmp_path}/in/**/*.txt"))
    assert found == sorted(found)
    assert len(found) == len(names)


def test_a_glob_plan_keeps_its_listing_apart_and_reads_per_microbatch(tmp_path) -> None:
    _landing(tmp_path / "in", [f"{i:02d}.pdf" for i in range(8)])
    store = RunStore(str(tmp_path / "store"))

    plan = _prepare(store, f"{tmp_path}/in/*.pdf")

    record = json.loads((tmp_path / "store" / "r" / "plan.json").read_text())
    assert record["version"] == 2
    assert "sources" not in record
    assert record["total_sources"] == 8
    assert [m["count"] for m in plan.microbatches()] == [3, 3, 2]
    assert store.read_sources(plan, 2) == [[f"{tmp_path}/in/06.pdf", f"{tmp_path}/in/07.pdf"]]


def test_the_same_sources_keep_the_stored_plan_and_others_are_refused(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    first = _prepare(store, ["a", "b", 1, {"k": 2}])
    listings = tmp_path / "r" / "sources"

    again = _prepare(store, ["a", "b", 1, {"k": 2}])
    assert again == first
    assert [p.name for p in listings.iterdir()] == [first.listing]

    with pytest.raises(RayOrchPlanChanged, match="4 sources; now"):
        _prepare(store, ["a", "b", 1, {"k": 3}])
    assert [p.name for p in listings.iterdir()] == [first.listing]

    replaced = _prepare(store, ["x"], on_plan_change="replace")
    assert [p.name for p in listings.iterdir()] == [replaced.listing]
    assert list(store.iter_sources(store.read_plan("r"))) == ["x"]


def test_a_version_1_plan_compares_with_its_inline_sources(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    (tmp_path / "r").mkdir()
    inline = {
        "run_id": "r",
        "pipeline": "m:F",
        "fingerprint": "f" * 64,
        "sources": ["a", "b"],
        "input_batch_size": 3,
        "backend": "local",
        "version": 1,
    }
    (tmp_path / "r" / "plan.json").write_text(json.dumps(inline))

    kept = _prepare(store, ["a", "b"])

    assert kept.version == 1
    assert json.loads((tmp_path / "r" / "plan.json").read_text()) == inline


def test_sources_that_are_not_json_values_are_refused(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    with pytest.raises(ValueError, match="must be JSON values"):
        _prepare(store, ["a", "b", "c", "d", b"bytes"])
    assert store.read_plan("r") is None
    assert not list((tmp_path / "r" / "sources").iterdir())  # the partial listing is gone
