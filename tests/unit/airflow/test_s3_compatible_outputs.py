"""Reading a run's outputs back from an S3-compatible run store (moto on loopback),
the documented way: with the connection's ``run_store_options``.

``RayOrchHook(conn_id).read_summary_outputs(summary)`` (or ``read_summary_outputs(
summary, options=RayOrchHook(conn_id).run_store_options)``); the example DAGs read
their outputs the same way, so they work on such a store too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore, read_summary_outputs
from tests.unit.moto_s3 import BUCKET, moto_s3_fixture  # noqa: F401 (a fixture)

if TYPE_CHECKING:
    from tests.unit.moto_s3 import S3Server

pytestmark = pytest.mark.timeout(120)

EXAMPLES = Path(__file__).resolve().parents[3] / "dags_examples"


def _connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, server: S3Server, root: str) -> None:
    extra = {"run_store": root, "run_store_options": server.options()}
    conn = {"conn_type": "rayorch", "extra": extra}
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))


def _two_microbatches(store: RunStore, run_id: str, values: list[Any]) -> dict[str, Any]:
    """Commit ``values`` as two microbatches; the run's summary."""
    half = len(values) // 2
    for index, (first, chunk) in enumerate(((0, values[:half]), (half, values[half:]))):
        rows = [("present", None, v) for v in chunk]
        uri = store.write_outputs(run_id, index, "out", first, rows)
        store.commit_microbatch(run_id, index, {"attempt": 1, "files": {"out": uri}})
    n = len(values)
    return {
        "run_id": run_id,
        "outputs": {"uri": store.outputs_uri(run_id), "rows": n},
        "sources": {"total": n, "present": n, "dropped": 0, "failed": 0, "suppressed": 0},
        "failures": [],
    }


def _s3_run(
    monkeypatch: pytest.MonkeyPatch,
    moto_s3: S3Server,
    conn_id: str,
    folder: str,
    run_id: str,
    values: list[Any],
) -> dict[str, Any]:
    """The summary of a run of two committed microbatches of ``values``, in
    ``s3://BUCKET/<folder>``: the run store of connection ``conn_id``."""
    root = f"s3://{BUCKET}/{folder}"
    _connection(monkeypatch, conn_id, moto_s3, root)
    return _two_microbatches(RunStore(root, moto_s3.options()), run_id, values)


def test_the_hook_reads_a_summarys_outputs_from_an_s3_compatible_store(
    moto_s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _s3_run(monkeypatch, moto_s3, "rayorch_minio", "hook-runs", "r1", [10, 11, 12, 13])
    hook = RayOrchHook("rayorch_minio")
    assert [r["value"] for r in hook.read_summary_outputs(run)] == [10, 11, 12, 13]
    microbatch = {**run, "microbatch": {"index": 1, "first_source": 2, "count": 2}}
    rows = hook.read_summary_outputs(microbatch)
    assert [(r["source"], r["value"]) for r in rows] == [(2, 12), (3, 13)]
    rows = read_summary_outputs(run, options=hook.run_store_options)
    assert [r["outcome"] for r in rows] == ["present"] * 4


def test_the_ingest_examples_report_reads_an_s3_compatible_store(
    moto_s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.dag_processing.dagbag import DagBag

    values = [{"words": 3}, {"words": 4}]
    run = _s3_run(monkeypatch, moto_s3, "rayorch_default", "ingest-runs", "ingest", values)
    dag = DagBag(dag_folder=str(EXAMPLES / "rayorch_ingest.py")).dags["rayorch_ingest"]
    report = dag.get_task("report").python_callable  # type: ignore[attr-defined]
    assert report(run) == {"documents": 2, "words": 7}


def test_the_document_example_publishes_from_an_s3_compatible_store(
    moto_s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    from rayorch_example_outputs import publish_documents

    root = f"s3://{BUCKET}/doc-runs"
    _connection(monkeypatch, "rayorch_default", moto_s3, root)
    store = RunStore(root, moto_s3.options())
    sources = ["/in/a.pdf", "/in/b.pdf"]
    store.write_plan(PlanRecord(run_id="docs", pipeline="m:P", fingerprint="f", sources=sources))
    docs = [
        {"source": s, "markdown": f"# {i}", "pages": 1, "skipped_pages": [], "page_details": []}
        for i, s in enumerate(sources)
    ]
    result = publish_documents(_two_microbatches(store, "docs", docs))
    assert [d["file"] for d in result["documents"]] == sources
    assert result["documents"][1]["markdown"] == f"{root}/docs/markdown/b.md"
    assert store.read_bytes(("docs", "markdown", "b.md")) == b"# 1\n"
    assert result["report"] == f"{root}/docs/report.html"
