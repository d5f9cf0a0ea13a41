"""A report's work does not grow with the run: at 10 and at 10,000 committed
microbatches of one plan, the live report (the driver's aggregate), the report of a
finished run rendered from the store (its aggregate record) and the run's state (the
runs page) make the same store reads and list the same number of rows; none opens a
microbatch manifest or ``run.json``'s per-microbatch listing."""

from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_rayorch.reports import writer
from airflow_provider_rayorch.runs import paths
from airflow_provider_rayorch.runs.aggregate import MAX_BINS, MAX_ROWS, SAMPLE_ROWS, RunAggregate
from airflow_provider_rayorch.runs.records import MicrobatchManifest
from airflow_provider_rayorch.runs.run_manifest import write_run_manifest
from airflow_provider_rayorch.runs.run_state import read_run_state, write_run_state
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

from .counting_fs import CountingHandler, counting

if TYPE_CHECKING:
    from pathlib import Path

    from airflow_provider_rayorch.reports._data import RunView

pytestmark = pytest.mark.timeout(300)

MICROBATCHES = 10_000
SIZE = SAMPLE_ROWS  # a manifest samples every source of its microbatch


@pytest.fixture(scope="module")
def plan_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run store holding the plan (and source listing) of 10,000 microbatches."""
    root = tmp_path_factory.mktemp("plan")
    RunStore(str(root)).write_plan(
        PlanRecord(
            run_id="run",
            pipeline="m:P",
            fingerprint="f",
            sources=[f"doc-{i}" for i in range(MICROBATCHES * SIZE)],
            input_batch_size=SIZE,
            max_failed_ratio=1.0,
        )
    )
    return root


def _manifest(index: int) -> MicrobatchManifest:
    first = index * SIZE
    rows = [{"source": first, "outcome": "failed", "cause": "boom"}]
    rows += [{"source": first + i, "outcome": "present", "cause": ""} for i in range(1, SIZE)]
    return MicrobatchManifest.model_validate(
        {
            "run_id": "run",
            "state": "success",
            "microbatch": {"index": index, "first_source": first, "count": SIZE},
            "sources": {
                "total": SIZE,
                "present": SIZE - 1,
                "dropped": 0,
                "failed": 1,
                "suppressed": 0,
            },
            "grains": {"dispatched": SIZE, "retried": 0, "suppressed": 0},
            "failures": [rows[0]],
            "elapsed_s": 0.5,
            "sample": {"out": rows},
            "outputs": {"uri": "x", "ports": ["out"]},
        }
    )


def _store(plan_root: Path, where: Path, committed: int) -> tuple[RunStore, RunAggregate]:
    """A copy of the plan's store (linked) and the aggregate of ``committed`` commits."""
    for folder, _, files in os.walk(plan_root):
        target = where / os.path.relpath(folder, plan_root)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            os.link(os.path.join(folder, name), target / name)
    store = RunStore(str(where))
    plan = store.read_plan("run")
    assert plan is not None
    return store, RunAggregate.of(plan, (_manifest(i) for i in range(committed)))


def _report(store: RunStore, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tuple[Any, ...]:
    """Write a report through a counting filesystem: its reads by file name (listings
    of the microbatches' source files by folder), the files it opened, and the rows it
    listed."""
    views: list[RunView] = []
    page = writer.report_page

    def keep(view: RunView, *args: Any, **kwargs: Any) -> Any:
        views.append(view)
        return page(view, *args, **kwargs)

    monkeypatch.setattr(writer, "report_page", keep)
    handler: CountingHandler = counting(store)
    writer.write_run_report(store, "run", **kw)
    return _reads(handler), handler.opened, len(views[0].rows), len(views[0].microbatches)


def _reads(handler: CountingHandler) -> Counter[str]:
    """Reads by file name; a microbatch's source listing counts under its folder."""
    return Counter(
        "sources/" if "/sources/" in p else os.path.basename(p.rstrip("/")) for p in handler.paths
    )


def _no_manifest_or_listing(opened: list[str]) -> None:
    assert not [p for p in opened if f"/{paths.MANIFESTS}/" in p]
    assert not [p for p in opened if p.endswith(paths.RUN_MANIFEST_FILE)]


def test_a_live_report_reads_and_lists_as_much_at_10_as_at_10000_commits(
    plan_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = []
    for committed in (10, MICROBATCHES):
        store, agg = _store(plan_root, tmp_path / str(committed), committed)
        found.append(_report(store, monkeypatch, live=agg.snapshot()))
    (few, _, *few_rows), (many, many_opened, *many_rows) = found
    assert few == many
    assert few_rows == many_rows == [MAX_ROWS, MAX_BINS]
    _no_manifest_or_listing(many_opened)


def test_a_finished_runs_report_reads_its_aggregate_record_not_its_manifests(
    plan_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = []
    for committed in (10, MICROBATCHES):
        store, agg = _store(plan_root, tmp_path / str(committed), committed)
        for i in range(committed):  # the manifests are there: the report must not read them
            store.write_record(paths.manifest("run", i), _manifest(i))
        figures = {"pipeline": "m:P", "fingerprint": "f", "max_failed_ratio": 1.0}
        write_run_manifest(store, "run", elapsed_s=1.0, aggregate=agg, **figures)
        write_run_state(store, "run", "succeeded", committed=committed, total=MICROBATCHES)
        found.append(_report(store, monkeypatch))
    (few, _, *few_rows), (many, many_opened, *many_rows) = found
    assert few == many
    assert many[paths.RUN_AGGREGATE_FILE] >= 1
    assert few_rows == many_rows == [MAX_ROWS, MAX_BINS]
    _no_manifest_or_listing(many_opened)


def test_the_run_state_of_a_finished_run_reads_no_per_microbatch_listing(
    plan_root: Path, tmp_path: Path
) -> None:
    store, agg = _store(plan_root, tmp_path, MICROBATCHES)
    figures = {"pipeline": "m:P", "fingerprint": "f", "max_failed_ratio": 1.0}
    write_run_manifest(store, "run", elapsed_s=1.0, aggregate=agg, **figures)
    write_run_state(store, "run", "succeeded", committed=MICROBATCHES, total=MICROBATCHES)
    handler = counting(store)
    state = read_run_state(store, "run")
    assert (state.state, state.job_status) == ("success", "SUCCEEDED")
    _no_manifest_or_listing(handler.opened)
    assert handler.reads <= 8, handler.paths
