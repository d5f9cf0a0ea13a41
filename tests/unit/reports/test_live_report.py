"""The driver's live report costs the same few store reads however many microbatches
its run committed: counts, timings and sampled source rows come from what the driver
aggregated at each commit, not from every manifest and output file."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_rayorch import job
from airflow_provider_rayorch.runs import driver, pipeline_load
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

from .counting_fs import CountingHandler, counting
from .test_report import parse

pytestmark = pytest.mark.timeout(300)


def _run(root: Any, fake_engine: Any, microbatches: int) -> tuple[RunStore, list[int], str]:
    """Run ``microbatches`` microbatches of 2 sources (source 1 poisoned) with the job's
    report writer; the store reads of each report it wrote, and the kept report."""
    store = RunStore(str(root))
    spec = "fake_pipelines:Square"
    fingerprint = pipeline_load.import_factory(spec)(poison=[1]).compile().fingerprint
    store.write_plan(
        PlanRecord(
            run_id="run",
            pipeline=spec,
            fingerprint=fingerprint,
            sources=list(range(2 * microbatches)),
            input_batch_size=2,
            pipeline_kwargs={"poison": [1]},
            max_failed_ratio=1.0,
        )
    )
    handler: CountingHandler = counting(store)
    reads: list[int] = []

    def report(
        store: RunStore, run_id: str, timeline: Any, calls: Any, *, microbatches: Any, **kw: Any
    ) -> str:
        before = handler.reads
        uri = job.write_report(store, run_id, timeline, calls, microbatches=microbatches, **kw)
        reads.append(handler.reads - before)
        return uri

    driver.run_plan(store, "run", report=report)
    html = (root / "run" / "report.html").read_text()
    return store, reads, html


def test_a_reports_store_reads_do_not_grow_with_committed_microbatches(
    tmp_path: Any, fake_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("call_metrics", "timeline"):  # the fake engine measures nothing
        monkeypatch.setattr(fake_engine.FakeExecutor, name, lambda self: [], raising=False)
    _, few, _ = _run(tmp_path / "few", fake_engine, 10)
    _, many, html = _run(tmp_path / "many", fake_engine, 100)
    assert few
    assert many
    assert many[-1] == few[-1], f"the final report read {few[-1]} then {many[-1]} times"
    page = parse(html)
    assert 'data-state="success"' in html
    # the sampled rows keep the failure, and the counts are the run's
    rows = page.rows["sources-table"][1:]
    assert any(r[0] == "1" and "failed" in r for r in rows), rows[:3]
    assert "100/100" in html
