"""``rayorch_documents`` end to end: sample PDFs, OCR on a loopback head, kept outputs."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from airflow_provider_rayorch.workloads.samples import SAMPLE_DOCUMENTS

from .conftest import live_group_members

pytestmark = [pytest.mark.slow, pytest.mark.timeout(280)]


def squash(text: str) -> str:
    """Lower case without spaces: OCR may join or split words at spaces."""
    return re.sub(r"\s+", "", text).lower()


def printed_path(stdout: str, label: str) -> Path:
    match = re.search(rf"^\s*{re.escape(label)}:\s*(\S+)$", stdout, re.MULTILINE)
    assert match, f"no {label!r} line in:\n{stdout}"
    return Path(match.group(1))


def test_documents_dag_prepares_the_sample_pdfs(main_job) -> None:
    run = main_job("rayorch_documents")
    assert run.returncode == 0, run.explain()
    tasks = run.result["tasks"]
    assert run.result["state"] == "success", run.explain()
    assert tasks["documents.microbatch[0]"] == tasks["documents.microbatch[1]"] == "success"
    out = run.returned("publish")
    names = sorted(SAMPLE_DOCUMENTS)  # the sources glob lists files sorted
    docs = {Path(d["file"]).name: d for d in out["documents"]}
    assert sorted(docs) == sorted(n for n, pages in SAMPLE_DOCUMENTS.items() if pages)
    assert out["sources"] == {"total": 4, "present": 3, "dropped": 0, "failed": 1, "suppressed": 0}

    # the multi-page PDF: every page's words, in page order
    report = docs["annual-report.pdf"]
    pages = SAMPLE_DOCUMENTS["annual-report.pdf"]
    assert pages is not None
    assert report["pages"] == len(pages) == 3
    assert [squash(p["text"]) for p in report["page_texts"]] == [
        squash("".join(lines)) for lines in pages
    ]
    assert squash(report["text"]) == squash("".join("".join(p) for p in pages))

    # the blank page: no text, skipped, and its document is still PRESENT
    memo = docs["memo-with-blank-page.pdf"]
    assert memo["pages"] == 2
    assert memo["skipped_pages"] == [2]
    assert memo["page_texts"][1] == {"page": 2, "text": "", "skipped": True}
    assert squash(memo["text"]) == squash("Team memo Meeting on Friday")

    # the corrupt file FAILS with a cause naming it (its source index and file name, and
    # PDFium's words), shown to the user
    index = names.index("corrupt.pdf")
    (failure,) = out["failures"]
    assert Path(failure["file"]).name == "corrupt.pdf"
    assert (failure["source"], failure["outcome"]) == (index, "failed")
    cause = f"doc[{index}]: corrupt.pdf: corrupt or not a PDF ("
    assert failure["cause"].startswith(cause), failure["cause"]
    summary = run.returned("documents.run")
    assert summary["failures"] == [
        {"source": index, "outcome": "failed", "cause": failure["cause"]}
    ]
    assert f"corrupt.pdf (source {index}, failed): {cause}" in run.stdout
    for line in ("Annual report 2026", "Meeting on Friday", "(blank page: no text, skipped)"):
        assert line in run.stdout, run.stdout

    # the outputs exist where the job printed them, inside the chosen output folder
    markdown = printed_path(run.stdout, "markdown per document")
    parquet = printed_path(run.stdout, "Parquet outputs")
    html = printed_path(run.stdout, "HTML report")
    for path in (markdown, parquet, html):
        assert path.is_relative_to(run.output), path
    assert sorted(p.name for p in markdown.iterdir()) == sorted(f"{Path(n).stem}.md" for n in docs)
    for name, doc in docs.items():
        assert Path(doc["markdown"]) == markdown / f"{Path(name).stem}.md"
        assert (markdown / f"{Path(name).stem}.md").read_text() == doc["text"] + "\n"
    # one file per microbatch (their value types may differ: read them one by one)
    files = sorted(parquet.glob("mb-*/out.parquet"))
    assert [f.parent.name for f in files] == ["mb-00000", "mb-00001"]
    rows = [row for f in files for row in pq.read_table(f).to_pylist()]
    assert sorted((r["source"], r["outcome"]) for r in rows) == [
        (i, "failed" if n == "corrupt.pdf" else "present") for i, n in enumerate(names)
    ]
    kept = html.read_text()
    assert "corrupt or not a PDF" in kept
    # the kept report says the run ended; nothing says its job runs
    assert 'data-state="success"' in kept
    assert "RUNNING" not in kept, "the kept report says the Ray job is RUNNING"
    assert " is running" not in kept
    assert "<script" not in kept  # rendered from data: no script in any report

    # the run's shared loopback head: no teardown task; the main job stopped it at its end
    assert "documents.stop_ray_head[-1]" not in run.result["tasks"]
    pgid = int(run.returned("documents.ray_head")["pgid"])
    deadline = time.monotonic() + 30
    while live_group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert live_group_members(pgid) == []
