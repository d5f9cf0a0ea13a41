"""Small RayOrch pipelines used by the example DAGs (importable: not defined in a DAG file).

``TextDocPipeline`` mimics document preparation without PDFs or models: a source
row is a document text whose pages are separated by form feeds (``\\f``); each page
is "recognized" (normalized and counted) on a pool of replicas, and the pages of a
document are reduced back into one record. A page containing ``POISON`` fails,
which makes its document SUPPRESSED (the failure began in a child page).
"""

from __future__ import annotations

import time
from typing import Any

import airflow_provider_rayorch.rayorch as ro


class SplitPages:
    def __init__(self, read_files: bool = False) -> None:
        self.read_files = read_files

    def _load(self, doc: Any) -> Any:
        if not isinstance(doc, str):
            return ro.RecordFailure("not text")
        if not self.read_files:
            return doc.split("\f")
        try:
            with open(doc.removeprefix("file://"), encoding="utf-8") as f:
                return f.read().split("\f")
        except OSError as exc:
            return ro.RecordFailure(f"cannot read {doc}: {exc.strerror}")

    def run(self, docs: list[Any]) -> list[Any]:
        return [self._load(d) for d in docs]


class Recognize:
    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s

    def run(self, pages: list[str]) -> list[Any]:
        if self.delay_s:
            time.sleep(self.delay_s * len(pages))
        out: list[Any] = []
        for page in pages:
            if "POISON" in page:
                out.append(ro.RecordFailure("unreadable page"))
            else:
                out.append({"text": " ".join(page.split()), "words": len(page.split())})
        return out


class Assemble:
    def run(self, page_groups: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
        return [
            {
                "markdown": "\n\n".join(p["text"] for p in pages),
                "pages": len(pages),
                "words": sum(p["words"] for p in pages),
            }
            for pages in page_groups
        ]


class TextDocPipeline(ro.Pipeline):
    """doc -> pages -> recognized pages -> one record per doc.

    With ``read_files=True`` a source row is the path of a text file instead. With
    ``share_process="name"`` the three light stages run in one actor process (a cold
    run starts one process instead of four; docs/engine-api.md, ``share_process``).
    """

    def __init__(
        self,
        replicas: int = 2,
        delay_s: float = 0.0,
        read_files: bool = False,
        share_process: str | None = None,
    ) -> None:
        light = {"num_cpus": 0.25, "share_process": share_process}
        self.split = (
            ro.RayModule(SplitPages)
            .pre_init(read_files=read_files)
            .ray_options(replicas=1, batch_size=4, **light)
        )
        self.recognize = (
            ro.RayModule(Recognize)
            .pre_init(delay_s=delay_s)
            .ray_options(replicas=replicas, batch_size=8, **light)
        )
        self.assemble = ro.RayModule(Assemble).ray_options(replicas=1, batch_size=4, **light)

    def forward(self, doc: ro.Port) -> ro.Port:
        pages = ro.F.expand(self.split(doc), domain="page")
        texts = self.recognize(pages)
        return self.assemble(ro.F.reduce(texts))


def sample_docs(n: int = 24, poison: tuple[int, ...] = ()) -> list[str]:
    """``n`` small documents of 1-4 pages; indices in ``poison`` get a bad page."""
    docs = []
    for i in range(n):
        pages = [f"document {i} page {p}: " + "lorem ipsum " * (p + 1) for p in range(1 + i % 4)]
        if i in poison:
            pages[-1] += " POISON"
        docs.append("\f".join(pages))
    return docs
