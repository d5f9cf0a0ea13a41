"""The sample inputs of the example DAGs: PDFs drawn with PDFium only, clips with PyAV."""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("rapidocr_onnxruntime")

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.workloads._deps import MissingDependencyError
from airflow_provider_rayorch.workloads._pdf import PdfError, open_pdf
from airflow_provider_rayorch.workloads.documents import DocumentPipeline
from airflow_provider_rayorch.workloads.samples import (
    SAMPLE_DOCUMENTS,
    write_pdfium_pdf,
    write_sample_documents,
    write_text_pdf,
)

if TYPE_CHECKING:
    from pathlib import Path


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def test_pdfium_pdf_needs_no_reportlab(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("reportlab", "reportlab.pdfgen", "reportlab.pdfgen.canvas"):
        monkeypatch.setitem(sys.modules, name, None)  # importing it now fails
    with pytest.raises(MissingDependencyError, match="reportlab"):
        write_text_pdf(None, [["ONE"]])
    data = write_pdfium_pdf(None, [["ONE"], [], ["THREE"]])
    doc = open_pdf(data)
    assert len(doc) == 3
    assert doc[0].get_textpage().get_text_range().strip() == "ONE"
    assert doc[1].get_textpage().get_text_range().strip() == ""
    doc.close()


def test_sample_documents_read_back_with_ocr(tmp_path: Path) -> None:
    paths = write_sample_documents(tmp_path)
    assert sorted(paths) == sorted(SAMPLE_DOCUMENTS)
    with pytest.raises(PdfError, match="corrupt or not a PDF"):
        open_pdf(paths["corrupt.pdf"])
    sources = [paths[name] for name in sorted(paths)]
    result = ro.run(DocumentPipeline(), sources, backend="local")
    for name, out in zip(sorted(paths), result.outputs, strict=True):
        pages = SAMPLE_DOCUMENTS[name]
        if pages is None:
            assert out.outcome is ro.ItemOutcome.FAILED
            continue
        assert out["pages"] == len(pages)
        assert squash(out["markdown"]) == squash("".join("".join(p) for p in pages))
        assert out["skipped_pages"] == [n for n, lines in enumerate(pages, 1) if not lines]
