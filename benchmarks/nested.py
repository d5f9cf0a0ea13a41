"""Workload 3: document -> page -> table -> page -> document, with empty groups.

Each page holds 0 to 3 tables (a quarter of the pages hold none: an empty
group that must still come back as a page with no tables). Tables run on the
emulated accelerators in batches that mix pages and documents; pages are
assembled from their tables in order, documents from their pages.

This engine and the paper's package express it with two ``F.expand`` /
``F.reduce`` pairs. Ray Data needs a placeholder row for a page without tables
(a flat dataset has no empty groups) and two group-bys; so does Daft (two
``explode`` and two ``groupby().agg`` with the same placeholder).
"""

from __future__ import annotations

import importlib
import statistics
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from .measure import all_actors_up
from .workload import CostModel, Workload, digest, make_docs

if TYPE_CHECKING:
    from ray.data import Dataset

__all__ = ["run_all"]


def tables_on(doc: int, page: int) -> int:
    return (doc * 31 + page * 7) % 4


def expected(docs: list[Any]) -> dict[int, str]:
    return {
        d.doc: digest(d.doc, [k * 10 + tables_on(d.doc, k) for k in range(d.pages)]) for d in docs
    }


class SplitPages:
    def __init__(self, cost: CostModel) -> None:
        self.cost = cost

    def run(self, docs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        time.sleep(self.cost.split(len(docs)))
        return [[{"doc": d["doc"], "ord": k} for k in range(d["pages"])] for d in docs]


class DetectTables:
    """Page -> its tables (possibly none)."""

    def __init__(self, cost: CostModel) -> None:
        self.cost = cost

    def run(self, pages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        time.sleep(self.cost.render(len(pages)))
        return [
            [
                {"doc": p["doc"], "ord": p["ord"], "t": t}
                for t in range(tables_on(p["doc"], p["ord"]))
            ]
            for p in pages
        ]


class TableModel:
    """The emulated accelerator, on tables; placeholder rows (``t < 0``) cost nothing."""

    def __init__(self, cost: CostModel) -> None:
        self.cost = cost

    def run(self, tables: list[dict[str, Any]]) -> list[dict[str, Any]]:
        real = sum(1 for t in tables if t["t"] >= 0)
        if real:
            time.sleep(self.cost.model(real))
        return [{**t, "cells": t["t"] + 1} for t in tables]


class AssemblePage:
    def run(
        self, table_lists: list[list[dict[str, Any]]], pages: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        return [
            {"doc": p["doc"], "ord": p["ord"], "tables": [t["t"] for t in ts]}
            for ts, p in zip(table_lists, pages, strict=True)
        ]


class WriteDoc:
    def __init__(self, cost: CostModel) -> None:
        self.cost = cost

    def run(self, page_lists: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
        time.sleep(self.cost.write(len(page_lists), sum(len(p) for p in page_lists)))
        return [
            {
                "doc": pages[0]["doc"],
                "digest": digest(
                    pages[0]["doc"], [p["ord"] * 10 + len(p["tables"]) for p in pages]
                ),
            }
            for pages in page_lists
        ]


def rayorch_pipeline(ro: Any, w: Workload) -> Any:
    accel = {"num_cpus": 0, "resources": {"accel": 1}}

    class Nested(ro.Pipeline):
        def __init__(self) -> None:
            self.split = (
                ro.RayModule(SplitPages)
                .pre_init(w.cost)
                .ray_options(replicas=1, batch_size=w.split_batch, num_cpus=0)
            )
            self.detect = (
                ro.RayModule(DetectTables)
                .pre_init(w.cost)
                .ray_options(replicas=w.render_replicas, batch_size=w.render_batch, num_cpus=0)
            )
            self.model = (
                ro.RayModule(TableModel)
                .pre_init(w.cost)
                .ray_options(replicas=w.accelerators, batch_size=w.model_batch, **accel)
            )
            self.page = ro.RayModule(AssemblePage).ray_options(
                replicas=1, batch_size=16, num_cpus=0
            )
            self.write = (
                ro.RayModule(WriteDoc)
                .pre_init(w.cost)
                .ray_options(replicas=w.write_replicas, batch_size=w.write_batch, num_cpus=0)
            )

        def forward(self, doc: Any) -> Any:
            page = ro.F.expand(self.split(doc))
            table = ro.F.expand(self.detect(page))
            assembled = self.page(ro.F.reduce(self.model(table)), page)
            return self.write(ro.F.reduce(assembled))

    return Nested()


def run_rayorch(
    module: str, w: Workload, rows: list[dict[str, Any]], want: dict[int, str], rounds: int
) -> dict[str, Any]:
    ro = importlib.import_module(module)
    cold, warm, ok = [], [], True
    kwargs = {
        "input_batch_size": w.input_batch_size,
        "max_active_input_batches": w.max_active_input_batches,
    }
    for _ in range(rounds):
        t = time.perf_counter()
        with ro.Executor(rayorch_pipeline(ro, w)) as ex:
            out = ex.run(rows, **kwargs).outputs
            cold.append(time.perf_counter() - t)
            ok = ok and {o["doc"]: o["digest"] for o in out} == want
            all_actors_up(ex)
            t = time.perf_counter()
            out = ex.run(rows, **kwargs).outputs
            warm.append(time.perf_counter() - t)
            ok = ok and {o["doc"]: o["digest"] for o in out} == want
    return {"cold_s": statistics.median(cold), "warm_s": statistics.median(warm), "correct": ok}


# -- Ray Data -----------------------------------------------------------------------
def _rows(batch: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    keys = list(batch)
    n = len(batch[keys[0]]) if keys else 0
    return [{k: batch[k][i].item() for k in keys} for i in range(n)]


def _cols(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    return {k: np.array([r[k] for r in rows], dtype=np.int64) for k in keys}


class RDSplit:
    def __init__(self, cost: CostModel) -> None:
        self.udf = SplitPages(cost)

    def __call__(self, row: dict[str, Any]) -> list[dict[str, Any]]:
        return self.udf.run([row])[0]


class RDDetect:
    """Page rows -> table rows, with one placeholder (t = -1) for a page without tables."""

    def __init__(self, cost: CostModel) -> None:
        self.udf = DetectTables(cost)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        pages = _rows(batch)
        out = []
        for page, tables in zip(pages, self.udf.run(pages), strict=True):
            out += tables or [{"doc": page["doc"], "ord": page["ord"], "t": -1}]
        return _cols(out, ("doc", "ord", "t"))


class RDModel:
    def __init__(self, cost: CostModel) -> None:
        self.udf = TableModel(cost)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return _cols(self.udf.run(_rows(batch)), ("doc", "ord", "t", "cells"))


def rd_page(group: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    tables = sorted((r for r in _rows(group) if r["t"] >= 0), key=lambda r: r["t"])
    first = _rows(group)[0]
    return _cols(
        [{"doc": first["doc"], "ord": first["ord"], "n": len(tables)}], ("doc", "ord", "n")
    )


class RDWrite:
    def __init__(self, cost: CostModel) -> None:
        self.udf = WriteDoc(cost)

    def __call__(self, group: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        pages = sorted(_rows(group), key=lambda r: r["ord"])
        out = self.udf.run([[{**p, "tables": [0] * p["n"]} for p in pages]])
        return {"doc": np.array([out[0]["doc"]]), "digest": np.array([out[0]["digest"]])}


def run_raydata(
    w: Workload, rows: list[dict[str, Any]], want: dict[int, str], rounds: int
) -> dict[str, Any]:
    import ray
    import ray.data

    from .systems.raydata import blocks_for, pool, quiet

    quiet()
    parts = max(1, int(ray.cluster_resources().get("CPU", 2)))
    times, ok = [], True
    for _ in range(rounds + 1):
        t = time.perf_counter()
        ds: Dataset = ray.data.from_items(rows, override_num_blocks=blocks_for(w))
        ds = ds.flat_map(RDSplit, fn_constructor_args=(w.cost,), compute=pool(1), num_cpus=0)
        ds = ds.map_batches(
            RDDetect,
            fn_constructor_args=(w.cost,),
            batch_size=w.render_batch,
            compute=pool(w.render_replicas),
            num_cpus=0,
            batch_format="numpy",
        )
        ds = ds.map_batches(
            RDModel,
            fn_constructor_args=(w.cost,),
            batch_size=w.model_batch,
            compute=pool(w.accelerators),
            num_cpus=0,
            resources={"accel": 1},
            batch_format="numpy",
        )
        ds = ds.groupby(["doc", "ord"], num_partitions=parts).map_groups(
            rd_page, num_cpus=0, batch_format="numpy"
        )
        ds = ds.groupby("doc", num_partitions=parts).map_groups(
            RDWrite,
            fn_constructor_args=(w.cost,),
            compute=pool(w.write_replicas),
            num_cpus=0,
            batch_format="numpy",
        )
        out = ds.take_all()
        times.append(time.perf_counter() - t)
        ok = ok and {int(r["doc"]): str(r["digest"]) for r in out} == want
    return {"cold_s": times[0], "warm_s": statistics.median(times[1:]), "correct": ok}


# -- Daft ---------------------------------------------------------------------------
def daft_build(w: Workload, rows: list[dict[str, Any]], partitions: int) -> Any:
    """explode pages -> detect (a placeholder -1 for a page without tables) -> explode
    tables -> table model -> group by page -> group by document -> write."""
    import daft
    from daft import DataType, col

    cost = w.cost
    light = {"cpus": 0, "use_process": True}
    ints = DataType.list(DataType.int64())

    @daft.cls(max_concurrency=1, **light)
    class Split:
        def __init__(self) -> None:
            self.udf = SplitPages(cost)

        @daft.method.batch(return_dtype=ints, batch_size=w.split_batch)
        def run(self, doc: Any, pages: Any) -> list[list[int]]:
            docs = [
                {"doc": d, "pages": p}
                for d, p in zip(doc.to_pylist(), pages.to_pylist(), strict=True)
            ]
            return [[p["ord"] for p in out] for out in self.udf.run(docs)]

    @daft.cls(max_concurrency=w.render_replicas, **light)
    class Detect:
        def __init__(self) -> None:
            self.udf = DetectTables(cost)

        @daft.method.batch(return_dtype=ints, batch_size=w.render_batch)
        def run(self, doc: Any, ord: Any) -> list[list[int]]:
            pages = [
                {"doc": d, "ord": o} for d, o in zip(doc.to_pylist(), ord.to_pylist(), strict=True)
            ]
            return [[t["t"] for t in ts] or [-1] for ts in self.udf.run(pages)]

    @daft.cls(max_concurrency=w.accelerators, ray_options={"resources": {"accel": 1}}, **light)
    class Model:
        def __init__(self) -> None:
            self.udf = TableModel(cost)

        @daft.method.batch(return_dtype=DataType.int64(), batch_size=w.model_batch)
        def run(self, doc: Any, ord: Any, t: Any) -> list[int]:
            tables = [
                {"doc": d, "ord": o, "t": x}
                for d, o, x in zip(doc.to_pylist(), ord.to_pylist(), t.to_pylist(), strict=True)
            ]
            return [r["cells"] for r in self.udf.run(tables)]

    out_type = DataType.struct({"doc": DataType.int64(), "digest": DataType.string()})

    @daft.cls(max_concurrency=w.write_replicas, **light)
    class Write:
        def __init__(self) -> None:
            self.udf = WriteDoc(cost)

        @daft.method.batch(return_dtype=out_type, batch_size=w.write_batch)
        def run(self, doc: Any, ords: Any, tables: Any) -> list[dict[str, Any]]:
            docs = []
            for d, o, ts in zip(doc.to_pylist(), ords.to_pylist(), tables.to_pylist(), strict=True):
                pages = sorted(
                    (
                        {"doc": d, "ord": k, "tables": [t for t in tl if t >= 0]}
                        for k, tl in zip(o, ts, strict=True)
                    ),
                    key=lambda p: p["ord"],
                )
                docs.append(pages)
            return self.udf.run(docs)

    df = daft.from_pylist(rows).into_partitions(partitions)
    df = df.with_column("ord", Split().run(col("doc"), col("pages"))).explode("ord")
    df = df.with_column("t", Detect().run(col("doc"), col("ord"))).explode("t")
    df = df.with_column("cells", Model().run(col("doc"), col("ord"), col("t")))
    df = df.groupby("doc", "ord").agg(col("t").list_agg().alias("ts"))
    df = df.groupby("doc").agg(col("ord").list_agg().alias("ords"), col("ts").list_agg())
    return df.select(Write().run(col("doc"), col("ords"), col("ts")).alias("out"))


def run_daft(
    w: Workload, rows: list[dict[str, Any]], want: dict[int, str], rounds: int, partitions: int
) -> dict[str, Any]:
    from .systems.daft import use_ray

    use_ray()
    times, ok = [], True
    for _ in range(rounds + 1):
        t = time.perf_counter()
        out = daft_build(w, rows, partitions).to_pylist()
        times.append(time.perf_counter() - t)
        ok = ok and {r["out"]["doc"]: r["out"]["digest"] for r in out} == want
    return {"cold_s": times[0], "warm_s": statistics.median(times[1:]), "correct": ok}


def run_all(
    w: Workload, *, systems: tuple[str, ...] | None, rounds: int, daft_partitions: int = 16
) -> dict[str, Any]:
    """Workload 3 on ``w``'s layout and costs (``w.docs`` documents)."""
    from .systems import AVAILABLE, OURS, PAPER, XENNA, xenna

    docs = w.docs
    doc_list = make_docs(w)
    rows = [{"doc": d.doc, "pages": d.pages} for d in doc_list]
    want = expected(doc_list)
    empty = sum(1 for d in doc_list for k in range(d.pages) if tables_on(d.doc, k) == 0)
    out: dict[str, Any] = {
        "systems": {},
        "skipped": {},
        "docs": docs,
        "pages": sum(d.pages for d in doc_list),
    }
    plan = {
        OURS: lambda: run_rayorch("airflow_provider_rayorch.rayorch", w, rows, want, rounds),
        PAPER: lambda: run_rayorch("rayorch", w, rows, want, rounds),
        "Ray Data": lambda: run_raydata(w, rows, want, rounds),
        "Daft": lambda: run_daft(w, rows, want, rounds, daft_partitions),
        # Xenna: one stateful stage regroups tables into pages and pages into documents.
        XENNA: lambda: xenna.run_nested(w, rounds),
    }
    for name, runner in plan.items():
        if systems is not None and name not in systems:
            out["skipped"][name] = "not selected"
        elif not AVAILABLE[name]():
            out["skipped"][name] = "not installed"
        else:
            try:
                out["systems"][name] = {**runner(), "empty_pages": empty}
            except Exception as exc:
                out["skipped"][name] = f"error: {type(exc).__name__}: {exc}"
    tables = sum(tables_on(d.doc, k) for d in doc_list for k in range(d.pages))
    out["note"] = (
        f"{docs} documents, {out['pages']} pages, {tables} tables, {empty} pages without "
        f"tables; {w.accelerators} emulated accelerators for the table model. Median of "
        f"{rounds} round(s)."
    )
    return out
