"""``DocumentPipeline``: PDFs to text with per-page details, on CPUs by default.

::

    doc ──OpenPdf──► page indexes ─expand─► page
    page ──RenderPage(+ doc broadcast)──► image, keep ─filter─► DetectText ─expand─► region
    region ──RecognizeText──► text ─reduce─► page ──AssemblePage─► page detail
    page detail ─reduce─► doc ──AssembleDocument(+ OpenPdf info)──► result dict

Recognition batches regions of many pages and documents together. A blank page
is DROPPED (it still counts in ``pages``); a corrupt, encrypted or empty PDF FAILS.
A page that cannot be rendered fails its document with a ``GroupFailure``
(``on_bad_page="fail"``, the default) or is skipped like a blank page (``"skip"``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.workloads._options import check_stages, parse_options, stage_options
from airflow_provider_rayorch.workloads.document_stages import (
    AssembleDocument,
    AssemblePage,
    DetectText,
    OpenPdf,
    RecognizeText,
    RenderPage,
)

__all__ = ["STAGES", "DocumentOptions", "DocumentPipeline"]

STAGES = ("open", "render", "detect", "recognize", "assemble_page", "assemble_doc")


@dataclass(frozen=True)
class DocumentOptions:
    """Options of :class:`DocumentPipeline`; the defaults fit a Ray with 2 CPUs, no GPU."""

    dpi: float = 150.0
    """Render resolution; 150 reads 10 pt text well."""
    blank_ink: float = 1e-4
    """A page whose fraction of dark pixels is below this is blank and DROPPED."""
    on_bad_page: Literal["fail", "skip"] = "fail"
    """A page that cannot be rendered fails its document, or is skipped."""
    min_score: float = 0.5
    """Recognized regions scoring below this are left out of the text."""
    ocr_threads: int = 1
    """ONNX Runtime threads per detection or recognition actor."""
    render_replicas: int = 1
    detect_replicas: int = 1
    recognize_replicas: int = 1
    render_batch_size: int = 4
    detect_batch_size: int = 2
    recognize_batch_size: int = 32
    ray_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per-stage overrides, e.g. ``{"recognize": {"num_cpus": 2}}``; stages are
    ``open, render, detect, recognize, assemble_page, assemble_doc``."""

    def __post_init__(self) -> None:
        if self.on_bad_page not in ("fail", "skip"):
            raise UsageError(f"on_bad_page must be 'fail' or 'skip', not {self.on_bad_page!r}")
        if self.dpi <= 0:
            raise UsageError(f"dpi must be positive, not {self.dpi!r}")


class DocumentPipeline(ro.Pipeline):
    """PDF path or bytes -> ``{"markdown", "pages", "page_details", "skipped_pages", "source"}``."""

    def __init__(self, **options: Any) -> None:
        opts = parse_options(DocumentOptions, options, where="DocumentPipeline")
        check_stages(opts.ray_options, STAGES, where="DocumentPipeline")
        self.options = opts

        def ray(stage: str, **defaults: Any) -> dict[str, Any]:
            return stage_options(defaults, opts.ray_options, stage)

        light = {"num_cpus": 0.1}
        self.open: Any = (
            ro.RayModule(OpenPdf).returns(2).ray_options(**ray("open", batch_size=8, **light))
        )
        self.render: Any = (
            ro.RayModule(RenderPage)
            .pre_init(dpi=opts.dpi, blank_ink=opts.blank_ink, on_bad_page=opts.on_bad_page)
            .returns(2)
            .ray_options(
                **ray(
                    "render",
                    replicas=opts.render_replicas,
                    batch_size=opts.render_batch_size,
                    num_cpus=0.5,
                )
            )
        )
        self.detect: Any = (
            ro.RayModule(DetectText)
            .pre_init(threads=opts.ocr_threads)
            .ray_options(
                **ray(
                    "detect",
                    replicas=opts.detect_replicas,
                    batch_size=opts.detect_batch_size,
                    num_cpus=0.5,
                )
            )
        )
        self.recognize: Any = (
            ro.RayModule(RecognizeText)
            .pre_init(threads=opts.ocr_threads)
            .ray_options(
                **ray(
                    "recognize",
                    replicas=opts.recognize_replicas,
                    batch_size=opts.recognize_batch_size,
                    num_cpus=0.5,
                    recovery=ro.RecoveryPolicy.isolate_tail(max_retries=1),
                )
            )
        )
        self.assemble_page: Any = (
            ro.RayModule(AssemblePage)
            .pre_init(min_score=opts.min_score)
            .ray_options(**ray("assemble_page", batch_size=16, **light))
        )
        self.assemble_doc: Any = ro.RayModule(AssembleDocument).ray_options(
            **ray("assemble_doc", batch_size=8, **light)
        )

    def forward(self, doc: ro.Port) -> Any:
        page_indexes, info = self.open(doc)
        page = ro.F.expand(page_indexes, domain="page")
        image, keep = self.render(page, ro.F.broadcast(doc, like=page))
        region = ro.F.expand(self.detect(ro.F.filter(image, keep)), domain="region")
        text = self.recognize(region)
        detail = self.assemble_page(ro.F.reduce(text), page)
        return self.assemble_doc(ro.F.reduce(detail), info)
