"""Workload 1 on Daft (Ray runner), written as its docs recommend.

``from_pylist`` -> a split UDF giving each document its page ordinals ->
``explode`` -> ``@daft.cls`` batch UDFs with ``max_concurrency`` (render, then
the page model holding one ``accel`` unit per instance through
``ray_options``) -> ``groupby("doc").agg(list_agg ...)`` -> a write UDF that
sorts each document's pages by ordinal. Daft keeps no UDF instances between
collects: "warm" is a second collect in the same process.
"""

from __future__ import annotations

import time
from typing import Any

from ..measure import Measurement, expected_digests, measure
from ..workload import PageModel, Render, Split, Workload, Write, make_docs

__all__ = ["available", "run_pair", "version"]


def available() -> bool:
    try:
        import daft  # noqa: F401
    except ImportError:
        return False
    return True


def version() -> str:
    import daft

    return f"daft {daft.__version__}"


def udfs(w: Workload) -> dict[str, Any]:
    """The four stages as Daft class UDFs sized from the workload."""
    import daft
    from daft import DataType

    def split_cls(cost: Any) -> type:
        class SplitDocs:
            def __init__(self) -> None:
                self.udf = Split(cost)

            @daft.method.batch(
                return_dtype=DataType.list(DataType.int64()), batch_size=w.split_batch
            )
            def run(self, doc: Any, pages: Any) -> list[list[int]]:
                rows = [
                    {"doc": d, "pages": p, "poisoned": False}
                    for d, p in zip(doc.to_pylist(), pages.to_pylist(), strict=True)
                ]
                return [[page["ord"] for page in out] for out in self.udf.run(rows)]

        return SplitDocs

    def render_cls(cost: Any) -> type:
        class RenderPages:
            def __init__(self) -> None:
                self.udf = Render(cost)

            @daft.method.batch(return_dtype=DataType.int64(), batch_size=w.render_batch)
            def run(self, doc: Any, ord: Any) -> list[int]:
                rows = [
                    {"doc": d, "ord": o, "poison": False}
                    for d, o in zip(doc.to_pylist(), ord.to_pylist(), strict=True)
                ]
                return [r["img"] for r in self.udf.run(rows)]

        return RenderPages

    model_type = DataType.struct(
        {"bs": DataType.int64(), "bt": DataType.float64(), "pid": DataType.int64()}
    )

    def model_cls(cost: Any) -> type:
        class ModelPages:
            def __init__(self) -> None:
                self.udf = PageModel(cost)

            @daft.method.batch(return_dtype=model_type, batch_size=w.model_batch)
            def run(self, doc: Any, ord: Any) -> list[dict[str, Any]]:
                rows = [
                    {"doc": d, "ord": o, "poison": False}
                    for d, o in zip(doc.to_pylist(), ord.to_pylist(), strict=True)
                ]
                return [{"bs": r["bs"], "bt": r["bt"], "pid": r["pid"]} for r in self.udf.run(rows)]

        return ModelPages

    out_type = DataType.struct(
        {
            "doc": DataType.int64(),
            "pages": DataType.int64(),
            "digest": DataType.string(),
            "busy": DataType.float64(),
            "batches": DataType.float64(),
            "t_done": DataType.float64(),
            "pids": DataType.list(DataType.int64()),
        }
    )

    def write_cls(cost: Any) -> type:
        class WriteDocs:
            def __init__(self) -> None:
                self.udf = Write(cost)

            @daft.method.batch(return_dtype=out_type, unnest=True, batch_size=w.write_batch)
            def run(self, doc: Any, ords: Any, models: Any) -> list[dict[str, Any]]:
                docs = []
                for d, o, m in zip(
                    doc.to_pylist(), ords.to_pylist(), models.to_pylist(), strict=True
                ):
                    pages = [{"doc": d, "ord": a, **b} for a, b in zip(o, m, strict=True)]
                    docs.append(sorted(pages, key=lambda p: p["ord"]))
                return self.udf.run(docs)

        return WriteDocs

    light = {"cpus": 0, "use_process": True}
    return {
        "split": daft.cls(split_cls(w.cost), max_concurrency=w.split_replicas, **light)(),
        "render": daft.cls(render_cls(w.cost), max_concurrency=w.render_replicas, **light)(),
        "model": daft.cls(
            model_cls(w.cost),
            max_concurrency=w.accelerators,
            ray_options={"resources": {"accel": 1}},
            **light,
        )(),
        "write": daft.cls(write_cls(w.cost), max_concurrency=w.write_replicas, **light)(),
    }


def partitions_for(w: Workload) -> int:
    return max(1, w.docs // 2)


def build(w: Workload, rows: list[dict[str, Any]], partitions: int | None = None) -> Any:
    import daft
    from daft import col

    u = udfs(w)
    # One partition would run every stage serially: cut the documents into as
    # many partitions as Ray Data gets blocks, so every UDF instance is fed.
    df = daft.from_pylist(rows).into_partitions(partitions or partitions_for(w))
    df = df.with_column("ord", u["split"].run(col("doc"), col("pages"))).explode("ord")
    df = df.with_column("img", u["render"].run(col("doc"), col("ord")))
    df = df.with_column("m", u["model"].run(col("doc"), col("ord")))
    df = df.groupby("doc").agg(
        col("ord").list_agg().alias("ords"),
        col("m").list_agg().alias("models"),
    )
    return df.select(u["write"].run(col("doc"), col("ords"), col("models")))


def use_ray() -> None:
    import daft

    daft.set_runner_ray(noop_if_initialized=True)


def run_pair(
    w: Workload, *, warm_runs: int = 1, parallelism: int | None = None
) -> list[Measurement]:
    """A first collect ("cold") and ``warm_runs`` repeated collects.

    ``parallelism`` overrides the number of partitions (see ``partitions_for``)."""
    use_ray()
    docs = make_docs(w)
    rows = [{"doc": d.doc, "pages": d.pages} for d in docs]
    expected = expected_digests(docs)
    out = []
    for i in range(1 + warm_runs):
        started = time.time()
        result = build(w, rows, parallelism).to_pylist()
        finished = time.time()
        out.append(
            measure(
                "Daft",
                "cold" if i == 0 else "warm",
                result,
                started,
                finished,
                expected,
                w.accelerators,
            )
        )
    return out
