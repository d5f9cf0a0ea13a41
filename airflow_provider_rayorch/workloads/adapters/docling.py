"""Docling adapter: Docling converts one page at a time, models from a local artifacts dir.

Uses Docling's public API: ``DocumentConverter`` with ``PdfPipelineOptions(
artifacts_path=...)`` and ``convert(source, page_range=(n, n))``, then
``document.export_to_markdown()``. With ``artifacts_path`` set Docling loads its
layout and table models from that directory and does not download. Fetch them
once, where a model hub is reachable, with ``docling-tools models download``.

Pipeline: ``doc`` -> ``page`` (expand) -> Docling per page, batched across
documents -> ``doc`` (reduce), as in the paper's Docling adapter.
"""

from __future__ import annotations

import io
import os
from typing import TYPE_CHECKING, Any

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.rayorch.outcomes import RecordFailure
from airflow_provider_rayorch.workloads._deps import require
from airflow_provider_rayorch.workloads.adapters._common import AssembleMarkdown, require_model_dir
from airflow_provider_rayorch.workloads.document_stages import OpenPdf

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["DoclingDocumentPipeline", "DoclingPages"]

_HOW = (
    "download Docling's models with `docling-tools models download -o DIR` on a machine "
    "that reaches a model hub and copy DIR to every worker."
)


class DoclingPages:
    """``page``: convert each page with Docling; returns ``{"page", "markdown"}`` per row."""

    def __init__(
        self,
        artifacts_path: str,
        do_ocr: bool = False,
        do_table_structure: bool = True,
    ) -> None:
        root = require_model_dir(artifacts_path, what="Docling", how=_HOW)
        converter_mod: Any = require("docling.document_converter", extra="docling")
        options_mod: Any = require("docling.datamodel.pipeline_options", extra="docling")
        base: Any = require("docling.datamodel.base_models", extra="docling")
        options = options_mod.PdfPipelineOptions(
            artifacts_path=root, do_ocr=do_ocr, do_table_structure=do_table_structure
        )
        self._stream = base.DocumentStream
        self._ok = {base.ConversionStatus.SUCCESS, base.ConversionStatus.PARTIAL_SUCCESS}
        self.converter = converter_mod.DocumentConverter(
            format_options={
                base.InputFormat.PDF: converter_mod.PdfFormatOption(pipeline_options=options)
            }
        )

    def _source(self, source: object) -> Any:
        if isinstance(source, str | os.PathLike):
            return os.fspath(source)
        if isinstance(source, bytes | bytearray | memoryview):
            return self._stream(name="document.pdf", stream=io.BytesIO(bytes(source)))
        raise UsageError(
            f"unsupported PDF source of type {type(source).__name__}: a source row is a "
            "path or the PDF's bytes"
        )

    def run(self, pages: Sequence[int], sources: Sequence[object]) -> list[Any]:
        out: list[Any] = []
        for index, source in zip(pages, sources, strict=True):
            number = index + 1
            try:
                result = self.converter.convert(
                    self._source(source), page_range=(number, number), raises_on_error=False
                )
            except Exception as exc:  # Docling raises many types; the row fails with its text
                out.append(RecordFailure(f"Docling failed on page {number}: {exc!r}"))
                continue
            if result.status not in self._ok:
                errors = "; ".join(str(e) for e in getattr(result, "errors", [])) or "no detail"
                status = getattr(result.status, "value", result.status)
                out.append(RecordFailure(f"Docling status {status} on page {number}: {errors}"))
                continue
            markdown = result.document.export_to_markdown()
            out.append({"page": number, "markdown": str(markdown).strip()})
        return out


class DoclingDocumentPipeline(ro.Pipeline):
    """PDF path or bytes -> the same dict shape as ``DocumentPipeline``, via Docling."""

    def __init__(
        self,
        artifacts_path: str,
        do_ocr: bool = False,
        replicas: int = 1,
        batch_size: int = 4,
        **ray_actor_options: Any,
    ) -> None:
        self.open: Any = ro.RayModule(OpenPdf).returns(2).ray_options(batch_size=8, num_cpus=0.1)
        self.convert: Any = (
            ro.RayModule(DoclingPages)
            .pre_init(artifacts_path=artifacts_path, do_ocr=do_ocr)
            .ray_options(
                replicas=replicas, batch_size=batch_size, **{"num_cpus": 1, **ray_actor_options}
            )
        )
        self.assemble: Any = ro.RayModule(AssembleMarkdown).ray_options(batch_size=8, num_cpus=0.1)

    def forward(self, doc: ro.Port) -> Any:
        page_indexes, info = self.open(doc)
        page = ro.F.expand(page_indexes, domain="page")
        converted = self.convert(page, ro.F.broadcast(doc, like=page))
        return self.assemble(ro.F.reduce(converted), info)
