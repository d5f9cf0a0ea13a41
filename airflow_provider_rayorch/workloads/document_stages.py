"""The document pipeline's UDFs: plain classes, usable on their own or in any Pipeline.

Domains: ``doc`` (one PDF) -> ``page`` -> ``region`` (one detected text line).
Every ``run`` takes one list per input Port and returns one result per row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.rayorch.outcomes import GroupFailure, RecordFailure
from airflow_provider_rayorch.workloads._ocr import OcrEngine, crop_quad, reading_order
from airflow_provider_rayorch.workloads._pdf import (
    PdfError,
    PdfSourceCache,
    describe_source,
    open_pdf,
    render_page,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "AssembleDocument",
    "AssemblePage",
    "DetectText",
    "OpenPdf",
    "RecognizeText",
    "RenderPage",
    "ink_ratio",
]

BadPage = Literal["fail", "skip"]


def ink_ratio(image: np.ndarray, *, dark: int = 128) -> float:
    """Fraction of pixels darker than ``dark`` in a grayscale page image."""
    if image.size == 0:
        return 0.0
    return float(np.count_nonzero(image < dark)) / float(image.size)


class OpenPdf:
    """``doc``: open each PDF, list its page indexes and describe it.

    Returns ``(page_indexes, info)``. A missing, empty, corrupt or encrypted PDF is
    a ``RecordFailure`` whose cause says which.
    """

    def run(self, sources: Sequence[object]) -> tuple[list[Any], list[Any]]:
        pages: list[Any] = []
        infos: list[Any] = []
        for source in sources:
            try:
                doc = open_pdf(source)
            except PdfError as exc:
                failure = RecordFailure(str(exc))
                pages.append(failure)
                infos.append(failure)
                continue
            count = len(doc)
            doc.close()
            pages.append(list(range(count)))
            infos.append({"source": describe_source(source), "pages": count})
        return pages, infos


class RenderPage:
    """``page``: render one page to grayscale and say whether it has any ink.

    Returns ``(image, keep)``; ``keep`` is False for a blank page (ink ratio below
    ``blank_ink``). A page that cannot be rendered either fails the document
    (``on_bad_page="fail"``: a ``GroupFailure``, so the document's other queued
    pages are not rendered in vain) or is skipped like a blank page (``"skip"``).
    """

    def __init__(
        self, dpi: float = 150.0, blank_ink: float = 1e-4, on_bad_page: BadPage = "fail"
    ) -> None:
        if on_bad_page not in ("fail", "skip"):
            raise UsageError(
                f"RenderPage: on_bad_page must be 'fail' or 'skip', not {on_bad_page!r}"
            )
        self.dpi = dpi
        self.blank_ink = blank_ink
        self.on_bad_page = on_bad_page
        self._cache = PdfSourceCache(size=2)

    def run(self, pages: Sequence[int], sources: Sequence[object]) -> tuple[list[Any], list[Any]]:
        images: list[Any] = []
        keep: list[Any] = []
        for index, source in zip(pages, sources, strict=True):
            try:
                image = render_page(self._cache.get(source), index, dpi=self.dpi)
            except PdfError as exc:
                if self.on_bad_page == "skip":
                    images.append(None)
                    keep.append(False)
                else:
                    images.append(GroupFailure(str(exc)))
                    keep.append(GroupFailure(str(exc)))
                continue
            images.append(image)
            keep.append(ink_ratio(image) >= self.blank_ink)
        return images, keep


class DetectText:
    """``page``: find text lines; returns one list of region dicts per page.

    Each region holds ``crop`` (grayscale ``uint8``), ``box`` (``[x0, y0, x1, y1]``
    as fractions of the page size) and ``line`` (its line number), listed in
    reading order, ready for ``F.expand``.
    """

    def __init__(self, threads: int = 1, max_regions: int = 5000) -> None:
        self.engine = OcrEngine(threads=threads)
        self.max_regions = max_regions

    def run(self, images: Sequence[np.ndarray]) -> list[Any]:
        return [self._regions(image) for image in images]

    def _regions(self, image: np.ndarray) -> Any:
        quads = self.engine.detect(image)
        if len(quads) > self.max_regions:
            return RecordFailure(f"{len(quads)} text regions exceed max_regions={self.max_regions}")
        height, width = image.shape[:2]
        boxes = [
            (
                float(q[:, 0].min()) / width,
                float(q[:, 1].min()) / height,
                float(q[:, 0].max()) / width,
                float(q[:, 1].max()) / height,
            )
            for q in quads
        ]
        return [
            {
                "crop": crop_quad(image, quads[i]),
                "box": [round(v, 4) for v in boxes[i]],
                "line": line,
            }
            for i, line in reading_order(boxes)
        ]


class RecognizeText:
    """``region``: recognize each crop; batches mix regions of many pages and documents.

    Returns ``{"text", "score", "box", "line"}`` per region (the crop is left behind).
    """

    def __init__(self, threads: int = 1) -> None:
        self.engine = OcrEngine(threads=threads)

    def run(self, regions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        results = self.engine.recognize([r["crop"] for r in regions])
        return [
            {"text": text, "score": round(score, 4), "box": r["box"], "line": r["line"]}
            for r, (text, score) in zip(regions, results, strict=True)
        ]


class AssemblePage:
    """``page``: join a page's recognized regions (already in reading order) into text.

    Regions scoring below ``min_score`` or with empty text are left out.
    """

    def __init__(self, min_score: float = 0.5) -> None:
        self.min_score = min_score

    def run(
        self, region_lists: Sequence[Sequence[dict[str, Any]]], pages: Sequence[int]
    ) -> list[dict[str, Any]]:
        return [
            self._page(regions, index) for regions, index in zip(region_lists, pages, strict=True)
        ]

    def _page(self, regions: Sequence[dict[str, Any]], index: int) -> dict[str, Any]:
        kept = [r for r in regions if r["text"].strip() and r["score"] >= self.min_score]
        lines: list[list[str]] = []
        last_line: int | None = None
        for region in kept:
            if region["line"] != last_line:
                lines.append([])
                last_line = region["line"]
            lines[-1].append(region["text"].strip())
        return {
            "page": index + 1,
            "text": "\n".join(" ".join(words) for words in lines),
            "regions": [dict(r) for r in kept],
        }


class AssembleDocument:
    """``doc``: one dict per document from its present pages, in page order.

    ``markdown`` joins page texts with blank lines; ``pages`` is the document's page
    count (blank and skipped pages included); ``page_details`` has one entry per
    page that was not blank; ``skipped_pages`` lists the 1-based numbers of the others.
    """

    #: The key of each page detail that holds its text.
    text_key = "text"

    def run(
        self, page_lists: Sequence[Sequence[dict[str, Any]]], infos: Sequence[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        out = []
        for details, info in zip(page_lists, infos, strict=True):
            present = {d["page"] for d in details}
            out.append(
                {
                    "source": info["source"],
                    "pages": int(info["pages"]),
                    "markdown": "\n\n".join(d[self.text_key] for d in details if d[self.text_key]),
                    "page_details": list(details),
                    "skipped_pages": [
                        n for n in range(1, int(info["pages"]) + 1) if n not in present
                    ],
                }
            )
        return out
