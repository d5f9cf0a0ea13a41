"""The driver's running aggregate keeps a fixed number of entries whatever the number
of commits, and sums them into the same run manifest as reading every manifest back."""

from __future__ import annotations

import random
from typing import Any

import pytest

from airflow_provider_rayorch.rayorch import summary as summaries
from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.reports._live import live_view
from airflow_provider_rayorch.runs.aggregate import MAX_BINS, MAX_ROWS, RunAggregate
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.records import MicrobatchManifest
from airflow_provider_rayorch.runs.run_manifest import write_run_manifest
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore
from airflow_provider_rayorch.runs.verdict import judged

pytestmark = pytest.mark.timeout(300)


def _plan(microbatches: int, size: int = 2, ratio: float = 0.0) -> PlanRecord:
    return PlanRecord(
        run_id="run",
        pipeline="m:P",
        fingerprint="f",
        sources=list(range(microbatches * size)),
        input_batch_size=size,
        max_failed_ratio=ratio,
    )


def _manifest(index: int, size: int = 2, *, failed: int = 0, **extra: Any) -> MicrobatchManifest:
    first = index * size
    rows = [{"source": first + i, "outcome": "failed", "cause": "boom"} for i in range(failed)]
    rows += [{"source": first + i, "outcome": "present", "cause": ""} for i in range(failed, size)]
    return MicrobatchManifest.model_validate(
        {
            "run_id": "run",
            "state": "failed" if failed else "success",
            "microbatch": {"index": index, "first_source": first, "count": size},
            "sources": {
                "total": size,
                "present": size - failed,
                "dropped": 0,
                "failed": failed,
                "suppressed": 0,
            },
            "grains": {"dispatched": size + 1, "retried": index % 2, "suppressed": 0},
            "entities": {"page": 3 * size},
            "failures": [
                {"source": r["source"], "outcome": "failed", "cause": "boom"} for r in rows[:failed]
            ],
            "elapsed_s": 0.5 + index % 7,
            "sample": {"out": rows},
            **extra,
        }
    )


def test_the_aggregate_keeps_as_many_entries_after_100000_manifests_as_after_1000() -> None:
    size = 20  # 10 failed and 10 present sampled rows each: the row caps fill by 1,000
    agg = RunAggregate.of(_plan(100_000, size))
    for index in range(1000):
        agg.add(_manifest(index, size, failed=10))
    after_1000 = agg.entries()
    assert len(agg.bad_rows) == len(agg.good_rows) == MAX_ROWS
    for index in range(1000, 100_000):
        agg.add(_manifest(index, size, failed=10))
    assert agg.entries() == after_1000
    assert len(agg.bins) == MAX_BINS
    assert agg.totals["failed"] == 100_000 * 10
    assert agg.committed == 100_000
    assert sum(b.committed for b in agg.bins.values()) == 100_000


def test_the_run_manifest_from_the_aggregate_is_the_sum_of_the_manifests() -> None:
    plan = _plan(700, ratio=0.4)
    rng = random.Random(7)
    manifests = []
    for index in rng.sample(range(700), 600):  # committed out of order, some pending
        repaired: dict[str, Any] = {}
        if index % 97 == 0:
            history = [{"attempt": 1, "state": "failed", "at": "t1"}, {"attempt": 2, "at": "t2"}]
            repaired = {"attempt": 2, "attempts": history}
        manifests.append(_manifest(index, failed=rng.choice((0, 0, 1, 2)), **repaired))
    agg = RunAggregate.of(plan, manifests)
    figures = {
        "elapsed_s": 12.3456789,
        "run_id": "run",
        "pipeline": "m:P",
        "fingerprint": "f",
        "outputs_uri": "/out",
        "max_failed_ratio": 0.4,
    }
    expected = summaries.run_summary([plain(m) for m in manifests], **figures)
    assert len(expected["failures"]) == summaries.FAILURES_CAP
    assert any("attempts" in entry for entry in expected["microbatches"])
    assert agg.run_summary(**figures) == expected


def test_a_microbatch_is_added_once_and_judged_against_the_plans_ratio() -> None:
    agg = RunAggregate.of(_plan(3), [_manifest(1)])
    with pytest.raises(UsageError, match="added once"):
        agg.add(_manifest(1))
    with pytest.raises(UsageError, match="failed ratio"):
        agg.run_summary(
            elapsed_s=1.0,
            run_id="run",
            pipeline=None,
            fingerprint=None,
            outputs_uri=None,
            max_failed_ratio=0.5,
        )


def test_a_live_report_of_more_microbatches_than_bins_shows_rows_of_several(tmp_path) -> None:
    agg = RunAggregate.of(_plan(1000), [_manifest(i, failed=int(i == 15)) for i in range(999)])
    for i in range(999):
        agg.timing(i, float(i), float(i) + 1.0)
    view = live_view(RunStore(str(tmp_path)), agg, {t["index"]: t for t in agg.timings()})
    rows = view.microbatches
    assert len(rows) == 100 == MAX_BINS  # 1,000 microbatches, 10 a row
    assert [(r.name, r.state, r.done_count) for r in rows[:2]] == [
        ("mb 0-9", "success", 10),
        ("mb 10-19", "failed", 10),  # microbatch 15 failed
    ]
    assert (rows[-1].name, rows[-1].state, rows[-1].done_count) == ("mb 990-999", "running", 9)
    assert (rows[1].started_s, rows[1].finished_s) == (10.0, 20.0)
    assert sum(r.size for r in rows) == 1000
    assert sum(r.done_count for r in rows) == 999
    assert view.sources["failed"] == 1


def test_a_rewritten_run_manifest_reads_the_manifests_one_at_a_time(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RunStore(str(tmp_path))
    store.write_plan(_plan(40, ratio=0.4))
    manifests = [_manifest(i, failed=i % 3) for i in range(0, 40, 2)]
    for m in manifests:
        store.commit_microbatch("run", m.microbatch.index, plain(m))  # type: ignore[union-attr]
    expected = summaries.run_summary(
        [plain(m) for m in store.manifest_records("run")],
        elapsed_s=2.0,
        run_id="run",
        pipeline="m:P",
        fingerprint="f",
        outputs_uri=store.outputs_uri("run"),
        max_failed_ratio=0.4,
    )

    def all_at_once(run_id: str) -> None:
        raise AssertionError("every manifest read at once")

    monkeypatch.setattr(store, "manifest_records", all_at_once)
    written = write_run_manifest(
        store, "run", elapsed_s=2.0, pipeline="m:P", fingerprint="f", max_failed_ratio=0.4
    )
    assert written == judged(expected, 0.4)
