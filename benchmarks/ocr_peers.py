"""Workload 2 (real OCR) on Ray Data and Daft, with the document pipeline's own stages.

The same graph as ``ocr.pipeline``: open each PDF -> its pages -> render (blank
pages are kept aside) -> detect text regions -> recognize the regions in batches
that mix pages and documents -> gather regions back per page (reading order) ->
assemble the page -> gather pages back per document (page order) -> assemble the
document. A flat dataset has no empty groups, so a page without regions and a
blank page travel as one placeholder row each (as in workload 3), and every row
carries its document's description. Same batch sizes and one actor per model
stage, as for the rayorch engines.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from airflow_provider_rayorch.workloads.document_stages import (
    AssembleDocument,
    AssemblePage,
    DetectText,
    OpenPdf,
    RecognizeText,
    RenderPage,
)

if TYPE_CHECKING:
    from ray.data import Dataset

__all__ = ["run_daft", "run_raydata"]

#: Region ordinal of a placeholder row: a blank page (-2) or a page without regions (-1).
BLANK, NO_REGION = -2, -1


def open_rows(row: dict[str, Any]) -> list[dict[str, Any]]:
    """One document -> one row per page, each carrying the document's description."""
    pages, infos = OpenPdf().run([row["path"]])
    info = infos[0]
    return [{"doc": row["doc"], "path": row["path"], "page": p, "info": info} for p in pages[0]]


def render_rows(stage: RenderPage, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    images, keep = stage.run([r["page"] for r in rows], [r["path"] for r in rows])
    blank = np.zeros((1, 1), dtype=np.uint8)  # one dtype for the column
    return [
        {**r, "image": image if kept else blank, "kept": bool(kept)}
        for r, image, kept in zip(rows, images, keep, strict=True)
    ]


def detect_rows(stage: DetectText, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Page rows -> region rows, with one placeholder for a blank page or a page
    without regions."""
    base = [{k: r[k] for k in ("doc", "page", "info")} for r in rows]
    kept = [i for i, r in enumerate(rows) if r["kept"]]
    found = dict(zip(kept, stage.run([rows[i]["image"] for i in kept]), strict=True))
    out: list[dict[str, Any]] = []
    for i, b in enumerate(base):
        regions = found.get(i)
        if regions is None:
            out.append({**b, "r": BLANK, "region": None})
        elif not regions:
            out.append({**b, "r": NO_REGION, "region": None})
        else:
            out += [{**b, "r": k, "region": region} for k, region in enumerate(regions)]
    return out


def recognize_rows(stage: RecognizeText, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    real = [i for i, r in enumerate(rows) if r["r"] >= 0]
    texts = dict(zip(real, stage.run([rows[i]["region"] for i in real]), strict=True))
    return [{**r, "region": texts.get(i)} for i, r in enumerate(rows)]


def assemble_page(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One page's region rows (any order) -> its detail, or None for a blank page."""
    rows = sorted(rows, key=lambda r: r["r"])
    first = rows[0]
    if first["r"] == BLANK:
        return {"doc": first["doc"], "page": first["page"], "info": first["info"], "detail": None}
    regions = [r["region"] for r in rows if r["r"] >= 0]
    detail = AssemblePage(min_score=0.5).run([regions], [first["page"]])[0]
    return {"doc": first["doc"], "page": first["page"], "info": first["info"], "detail": detail}


def assemble_doc(rows: list[dict[str, Any]]) -> dict[str, Any]:
    rows = sorted(rows, key=lambda r: r["page"])
    details = [r["detail"] for r in rows if r["detail"] is not None]
    out = AssembleDocument().run([details], [rows[0]["info"]])[0]
    return {"doc": rows[0]["doc"], "markdown": out["markdown"]}


# -- Ray Data -----------------------------------------------------------------------------
def _records(batch: Any) -> list[dict[str, Any]]:
    return batch.to_dict("records")


def _frame(rows: list[dict[str, Any]]) -> Any:
    import pandas as pd

    return pd.DataFrame.from_records(rows)


class _RDRender:
    def __init__(self) -> None:
        self.stage = RenderPage(dpi=150.0)

    def __call__(self, batch: Any) -> Any:
        return _frame(render_rows(self.stage, _records(batch)))


class _RDDetect:
    def __init__(self) -> None:
        self.stage = DetectText()

    def __call__(self, batch: Any) -> Any:
        return _frame(detect_rows(self.stage, _records(batch)))


class _RDRecognize:
    def __init__(self) -> None:
        self.stage = RecognizeText()

    def __call__(self, batch: Any) -> Any:
        return _frame(recognize_rows(self.stage, _records(batch)))


def _rd_page(group: Any) -> Any:
    return _frame([assemble_page(_records(group))])


def _rd_doc(group: Any) -> Any:
    return _frame([assemble_doc(_records(group))])


def run_raydata(paths: list[str], *, rounds: int) -> dict[str, Any]:
    """A cold execution and ``rounds`` warm ones; figures and the documents' text."""
    import ray
    import ray.data

    from .systems.raydata import pool, quiet

    quiet()
    parts = max(1, int(ray.cluster_resources().get("CPU", 2)))
    times: list[float] = []
    texts: list[str] = []
    for _ in range(1 + rounds):
        t = time.perf_counter()
        ds: Dataset = ray.data.from_items(
            [{"doc": i, "path": p} for i, p in enumerate(paths)], override_num_blocks=len(paths)
        )
        ds = ds.flat_map(open_rows, num_cpus=0.1)
        common: dict[str, Any] = {"batch_format": "pandas", "num_cpus": 0.5}
        ds = ds.map_batches(_RDRender, batch_size=4, compute=pool(1), **common)
        ds = ds.map_batches(_RDDetect, batch_size=2, compute=pool(1), **common)
        ds = ds.map_batches(_RDRecognize, batch_size=32, compute=pool(1), **common)
        ds = ds.groupby(["doc", "page"], num_partitions=parts).map_groups(
            _rd_page, num_cpus=0.1, batch_format="pandas"
        )
        ds = ds.groupby("doc", num_partitions=parts).map_groups(
            _rd_doc, num_cpus=0.1, batch_format="pandas"
        )
        rows = ds.take_all()
        times.append(time.perf_counter() - t)
        by_doc = {int(r["doc"]): str(r["markdown"]) for r in rows}
        texts = [by_doc.get(i, "<missing>") for i in range(len(paths))]
    return {"cold_s": times[0], "warm_s": float(np.median(times[1:])), "texts": texts}


class Opaque:
    """A row Daft carries as a Python object (a bare dict would be cast to a struct)."""

    __slots__ = ("row",)

    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row

    def __reduce__(self) -> tuple[Any, ...]:
        return (Opaque, (self.row,))


# -- Daft -------------------------------------------------------------------------------------
def run_daft(paths: list[str], *, rounds: int) -> dict[str, Any]:
    """A cold collect and ``rounds`` warm ones; figures and the documents' text.

    Rows are Python objects (``DataType.python()``); each stage is a class UDF on
    one instance, exploded between stages, gathered with ``list_agg``."""
    import daft
    from daft import DataType, col

    from .systems.daft import use_ray

    use_ray()
    py = DataType.python()

    def unwrap(rows: Any) -> list[dict[str, Any]]:
        return [r.row for r in rows.to_pylist()]

    def wrap(rows: list[dict[str, Any]]) -> list[Opaque]:
        return [Opaque(r) for r in rows]

    light = {"cpus": 0.1, "use_process": True}

    @daft.cls(max_concurrency=1, **light)
    class Open:
        @daft.method.batch(return_dtype=DataType.list(py), batch_size=8)
        def run(self, rows: Any) -> list[list[Opaque]]:
            return [wrap(open_rows(r)) for r in unwrap(rows)]

    @daft.cls(max_concurrency=1, cpus=0.5, use_process=True)
    class Render:
        def __init__(self) -> None:
            self.stage = RenderPage(dpi=150.0)

        @daft.method.batch(return_dtype=py, batch_size=4)
        def run(self, rows: Any) -> list[Opaque]:
            return wrap(render_rows(self.stage, unwrap(rows)))

    @daft.cls(max_concurrency=1, cpus=0.5, use_process=True)
    class Detect:
        def __init__(self) -> None:
            self.stage = DetectText()

        @daft.method.batch(return_dtype=DataType.list(py), batch_size=2)
        def run(self, rows: Any) -> list[list[Opaque]]:
            pages = unwrap(rows)
            grouped: list[list[Opaque]] = [[] for _ in pages]
            index = {(p["doc"], p["page"]): i for i, p in enumerate(pages)}
            for region in detect_rows(self.stage, pages):
                grouped[index[(region["doc"], region["page"])]].append(Opaque(region))
            return grouped

    @daft.cls(max_concurrency=1, cpus=0.5, use_process=True)
    class Recognize:
        def __init__(self) -> None:
            self.stage = RecognizeText()

        @daft.method.batch(return_dtype=py, batch_size=32)
        def run(self, rows: Any) -> list[Opaque]:
            return wrap(recognize_rows(self.stage, unwrap(rows)))

    @daft.func(return_dtype=py)
    def page_of(rows: list[Any]) -> Opaque:
        return Opaque(assemble_page([r.row for r in rows]))

    @daft.func(return_dtype=DataType.string())
    def doc_text(rows: list[Any]) -> str:
        return str(assemble_doc([r.row for r in rows])["markdown"])

    @daft.func(return_dtype=DataType.int64())
    def key(row: Any, name: str) -> int:
        return int(row.row[name])

    times: list[float] = []
    texts: list[str] = []
    for _ in range(1 + rounds):
        t = time.perf_counter()
        df = daft.from_pylist(
            [{"src": Opaque({"doc": i, "path": p})} for i, p in enumerate(paths)]
        ).into_partitions(len(paths))
        df = df.select(Open().run(col("src")).alias("row")).explode("row")
        df = df.select(Render().run(col("row")).alias("row"))
        df = df.select(Detect().run(col("row")).alias("row")).explode("row")
        df = df.select(Recognize().run(col("row")).alias("row"))
        df = df.with_columns({"doc": key(col("row"), "doc"), "page": key(col("row"), "page")})
        df = df.groupby("doc", "page").agg(col("row").list_agg().alias("rows"))
        df = df.select(col("doc"), page_of(col("rows")).alias("row"))
        df = df.groupby("doc").agg(col("row").list_agg().alias("rows"))
        df = df.select(col("doc"), doc_text(col("rows")).alias("markdown"))
        rows = df.to_pylist()
        times.append(time.perf_counter() - t)
        by_doc = {int(r["doc"]): str(r["markdown"]) for r in rows}
        texts = [by_doc.get(i, "<missing>") for i in range(len(paths))]
    return {"cold_s": times[0], "warm_s": float(np.median(times[1:])), "texts": texts}
