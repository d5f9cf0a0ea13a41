"""The document UDFs, called directly on generated PDFs (no engine involved)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_rayorch.rayorch.outcomes import GroupFailure, RecordFailure
from airflow_provider_rayorch.workloads._ocr import reading_order
from airflow_provider_rayorch.workloads.document_stages import (
    AssembleDocument,
    AssemblePage,
    DetectText,
    OpenPdf,
    RecognizeText,
    RenderPage,
)
from airflow_provider_rayorch.workloads.samples import write_text_pdf

if TYPE_CHECKING:
    from pathlib import Path


def squash(text: str) -> str:
    """Lower case, spaces removed, line breaks kept."""
    return text.lower().replace(" ", "")


@pytest.fixture(scope="module")
def detect() -> DetectText:
    return DetectText()


@pytest.fixture(scope="module")
def recognize() -> RecognizeText:
    return RecognizeText()


def test_open_pdf_lists_pages(text_pdf: Path) -> None:
    pages, infos = OpenPdf().run([str(text_pdf), text_pdf.read_bytes()])
    assert pages == [[0, 1, 2], [0, 1, 2]]
    assert infos[0] == {"source": str(text_pdf), "pages": 3}
    assert infos[1]["pages"] == 3


def _encrypted_pdf(tmp_path: Path) -> Path:
    from reportlab.lib import pdfencrypt
    from reportlab.pdfgen import canvas

    path = tmp_path / "enc.pdf"
    pdf = canvas.Canvas(str(path), encrypt=pdfencrypt.StandardEncryption("secret"))
    pdf.drawString(100, 100, "hidden")
    pdf.save()
    return path


@pytest.mark.parametrize(
    ("make", "cause"),
    [
        pytest.param(lambda tmp: b"", "empty PDF", id="zero-bytes"),
        pytest.param(lambda tmp: b"%PDF-1.4 garbage", "corrupt or not a PDF", id="corrupt"),
        pytest.param(lambda tmp: str(tmp / "missing.pdf"), "no such file", id="missing"),
        pytest.param(lambda tmp: 42, "unsupported PDF source", id="wrong-type"),
        pytest.param(_encrypted_pdf, "encrypted PDF", id="encrypted"),
    ],
)
def test_open_pdf_fails_bad_sources(tmp_path: Path, make: Any, cause: str) -> None:
    pages, infos = OpenPdf().run([make(tmp_path)])
    assert isinstance(pages[0], RecordFailure)
    assert cause in pages[0].cause
    assert isinstance(infos[0], RecordFailure)


def test_render_marks_blank_pages(text_pdf: Path) -> None:
    images, keep = RenderPage(dpi=72).run([0, 1, 2], [str(text_pdf)] * 3)
    assert keep == [True, False, True]
    assert images[0].ndim == 2
    assert images[0].dtype.name == "uint8"


def test_bad_page_fails_group_or_is_skipped(text_pdf: Path) -> None:
    images, keep = RenderPage(dpi=72).run([0, 7], [str(text_pdf)] * 2)
    assert keep[0] is True
    assert isinstance(images[1], GroupFailure)
    assert "page 8" in images[1].cause
    images, keep = RenderPage(dpi=72, on_bad_page="skip").run([7], [str(text_pdf)])
    assert images == [None]
    assert keep == [False]


def test_render_rejects_unknown_policy() -> None:
    with pytest.raises(ValueError, match="on_bad_page"):
        RenderPage(on_bad_page="ignore")  # type: ignore[arg-type]


def test_reading_order_groups_lines_left_to_right() -> None:
    boxes = [
        (0.55, 0.12, 0.9, 0.2),  # line 0, right
        (0.1, 0.5, 0.4, 0.6),  # line 1
        (0.1, 0.1, 0.5, 0.2),  # line 0, left
    ]
    assert reading_order(boxes) == [(2, 0), (0, 0), (1, 1)]
    assert reading_order([]) == []


def _ocr_document(
    source: Any, detect: DetectText, recognize: RecognizeText, dpi: float = 150
) -> dict[str, Any]:
    """The pipeline's stages chained by hand, one document at a time."""
    pages, infos = OpenPdf().run([source])
    images, keep = RenderPage(dpi=dpi).run(pages[0], [source] * len(pages[0]))
    kept = [(p, img) for p, img, k in zip(pages[0], images, keep, strict=True) if k]
    region_lists = detect.run([img for _, img in kept])
    flat = [r for regions in region_lists for r in regions]
    recognized = iter(recognize.run(flat))
    per_page = [[next(recognized) for _ in regions] for regions in region_lists]
    details = AssemblePage().run(per_page, [p for p, _ in kept])
    return AssembleDocument().run([details], infos)[0]


def test_stages_recognize_words_in_reading_order(
    text_pdf: Path, detect: DetectText, recognize: RecognizeText
) -> None:
    doc = _ocr_document(str(text_pdf), detect, recognize)
    assert doc["pages"] == 3
    assert doc["skipped_pages"] == [2]
    assert [d["page"] for d in doc["page_details"]] == [1, 3]
    # PP-OCR sometimes misses a space between words, so compare words without spaces.
    assert squash(doc["page_details"][0]["text"]) == "helloworld\nsecondlinehere"
    assert squash(doc["markdown"]) == "helloworld\nsecondlinehere\n\npagethreeapple"
    region = doc["page_details"][0]["regions"][0]
    assert set(region) == {"text", "score", "box", "line"}
    assert 0.0 <= region["box"][0] < region["box"][2] <= 1.0


def test_all_blank_document_keeps_page_count(
    blank_pdf: Path, detect: DetectText, recognize: RecognizeText
) -> None:
    doc = _ocr_document(str(blank_pdf), detect, recognize)
    assert doc == {
        "source": str(blank_pdf),
        "pages": 2,
        "markdown": "",
        "page_details": [],
        "skipped_pages": [1, 2],
    }


def test_recognition_batches_regions_of_different_documents(
    tmp_path: Path, detect: DetectText, recognize: RecognizeText
) -> None:
    first = write_text_pdf(None, [["ALPHA"]])
    second = write_text_pdf(None, [["OMEGA 77"]])
    images, _ = RenderPage().run([0, 0], [first, second])
    regions = [r for page in detect.run(images) for r in page]
    texts = [squash(r["text"]) for r in recognize.run(regions)]
    assert texts == ["alpha", "omega77"]


def test_assemble_page_drops_low_confidence_regions() -> None:
    regions = [
        {"text": "good", "score": 0.9, "box": [0, 0, 1, 1], "line": 0},
        {"text": "noise", "score": 0.2, "box": [0, 0, 1, 1], "line": 0},
        {"text": " ", "score": 0.99, "box": [0, 0, 1, 1], "line": 1},
        {"text": "next", "score": 0.8, "box": [0, 0, 1, 1], "line": 2},
    ]
    (page,) = AssemblePage(min_score=0.5).run([regions], [4])
    assert page["page"] == 5
    assert page["text"] == "good\nnext"
    assert len(page["regions"]) == 2


def test_large_pages_are_detected_downscaled(text_pdf: Path) -> None:
    (image,), _ = RenderPage(dpi=150).run([0], [str(text_pdf)])
    full = DetectText()
    small = DetectText()
    small.engine.max_side = 400  # forces the downscaled path on a 875-pixel-wide page
    boxes_full = [r["box"] for r in full.run([image])[0]]
    boxes_small = [r["box"] for r in small.run([image])[0]]
    assert len(boxes_small) == len(boxes_full) == 2
    for a, b in zip(boxes_full, boxes_small, strict=True):
        assert a == pytest.approx(b, abs=0.03)
