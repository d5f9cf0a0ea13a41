"""MinerU adapter: one MinerU parse per page, models loaded once per actor from a local dir.

Targets the MinerU 4 Python API (``mineru.MinerUParser(...).parse(path,
page_range=...)`` and ``ParseResult.markdown()``). MinerU reads its model
location from its configuration; this adapter sets ``MINERU_MODEL_SOURCE=local``
and ``MINERU_MODEL_BASE_DIR=<models_dir>`` in the actor before importing MinerU,
so nothing is downloaded. Fetch the models once, where a model hub is reachable,
with MinerU's own ``mineru-models-download`` and copy that directory to the workers.

The pipeline splits work the way the paper's MinerU adapter does: ``doc`` ->
``page`` (expand) -> MinerU per page, batched across documents -> ``doc`` (reduce).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.outcomes import RecordFailure
from airflow_provider_rayorch.workloads._deps import require
from airflow_provider_rayorch.workloads.adapters._common import (
    AssembleMarkdown,
    SourceFiles,
    require_model_dir,
)
from airflow_provider_rayorch.workloads.document_stages import OpenPdf

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["MinerUDocumentPipeline", "MinerUPages"]

_HOW = (
    "download MinerU's models with `mineru-models-download` on a machine that reaches "
    "a model hub and copy that directory to every worker."
)


class MinerUPages:
    """``page``: parse each page with MinerU; returns ``{"page", "markdown"}`` per row.

    Inputs are the 0-based page index and the PDF (path or bytes, broadcast from
    ``doc``). A page MinerU cannot parse is a ``RecordFailure`` naming the error.
    """

    def __init__(
        self,
        models_dir: str,
        tier: str = "standard",
        parse_mode: Literal["auto", "txt", "ocr"] = "auto",
        image_analysis: bool = False,
    ) -> None:
        root = require_model_dir(models_dir, what="MinerU", how=_HOW)
        os.environ["MINERU_MODEL_SOURCE"] = "local"
        os.environ["MINERU_MODEL_BASE_DIR"] = root
        mineru: Any = require("mineru", extra="mineru")
        self.parser = mineru.MinerUParser(
            tier=tier, parse_mode=parse_mode, image_analysis=image_analysis
        )
        self._files = SourceFiles()

    def run(self, pages: Sequence[int], sources: Sequence[object]) -> list[Any]:
        out: list[Any] = []
        for index, source in zip(pages, sources, strict=True):
            try:
                result = self.parser.parse(self._files.path(source), page_range=str(index + 1))
                out.append({"page": index + 1, "markdown": str(result.markdown()).strip()})
            except Exception as exc:  # MinerU raises many types; the row fails with its text
                out.append(RecordFailure(f"MinerU failed on page {index + 1}: {exc!r}"))
        return out


class MinerUDocumentPipeline(ro.Pipeline):
    """PDF path or bytes -> the same dict shape as ``DocumentPipeline``, parsed by MinerU."""

    def __init__(
        self,
        models_dir: str,
        tier: str = "standard",
        parse_mode: Literal["auto", "txt", "ocr"] = "auto",
        replicas: int = 1,
        batch_size: int = 4,
        **ray_actor_options: Any,
    ) -> None:
        self.open: Any = ro.RayModule(OpenPdf).returns(2).ray_options(batch_size=8, num_cpus=0.1)
        self.parse: Any = (
            ro.RayModule(MinerUPages)
            .pre_init(models_dir=models_dir, tier=tier, parse_mode=parse_mode)
            .ray_options(
                replicas=replicas, batch_size=batch_size, **{"num_cpus": 1, **ray_actor_options}
            )
        )
        self.assemble: Any = ro.RayModule(AssembleMarkdown).ray_options(batch_size=8, num_cpus=0.1)

    def forward(self, doc: ro.Port) -> Any:
        page_indexes, info = self.open(doc)
        page = ro.F.expand(page_indexes, domain="page")
        parsed = self.parse(page, ro.F.broadcast(doc, like=page))
        return self.assemble(ro.F.reduce(parsed), info)
