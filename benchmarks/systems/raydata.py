"""Workload 1 on Ray Data, written as its docs recommend.

``from_items`` -> ``flat_map`` (split a document into page rows) ->
``map_batches`` with an actor pool per stage (render, then the page model on
actors holding one ``accel`` unit each) -> ``groupby("doc",
num_partitions=...)`` -> ``map_groups`` that sorts a document's pages by
ordinal and writes it. ``num_partitions`` is sized to the cluster's CPUs
rather than left at its default of 200 hash partitions, as an experienced
user would. Ray Data has no pool that outlives an execution: "warm" is a
second execution in the same process (Ray and the libraries already loaded),
with its actors started again.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import numpy as np

from ..measure import Measurement, expected_digests, measure
from ..workload import PageModel, Render, Split, Workload, Write, make_docs

if TYPE_CHECKING:
    from ray.data import Dataset

__all__ = ["available", "run_pair", "version"]


def available() -> bool:
    """Whether Ray Data and what ``ray[data]`` adds (pandas) are installed."""
    try:
        import pandas  # noqa: F401
        import ray.data  # noqa: F401
    except ImportError:
        return False
    return True


def version() -> str:
    import ray

    return f"ray[data] {ray.__version__}"


def _rows(batch: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    keys = list(batch)
    n = len(batch[keys[0]]) if keys else 0
    return [{k: batch[k][i].item() for k in keys} for i in range(n)]


def _columns(rows: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    keys = list(rows[0]) if rows else []
    return {k: np.array([r[k] for r in rows]) for k in keys}


class SplitRow:
    """flat_map callable: one document row -> its page rows."""

    def __init__(self, w: Workload) -> None:
        self.udf = Split(w.cost)

    def __call__(self, row: dict[str, Any]) -> list[dict[str, Any]]:
        return self.udf.run([row])[0]


class RenderBatch:
    def __init__(self, w: Workload) -> None:
        self.udf = Render(w.cost)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return _columns(self.udf.run(_rows(batch)))


class ModelBatch:
    def __init__(self, w: Workload) -> None:
        self.udf = PageModel(w.cost)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return _columns(self.udf.run(_rows(batch)))


class WriteGroup:
    """map_groups callable: one document's page rows, sorted by ordinal, written."""

    def __init__(self, w: Workload) -> None:
        self.udf = Write(w.cost)

    def __call__(self, group: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        pages = sorted(_rows(group), key=lambda p: p["ord"])
        return _columns(self.udf.run([pages]))


def pool(size: int) -> Any:
    import ray.data

    return ray.data.ActorPoolStrategy(size=size)


def blocks_for(w: Workload) -> int:
    """Input blocks: Ray Data runs one block's batches on one actor, so the source
    must be cut fine enough to keep every page-model actor fed (a block holds
    about two documents)."""
    return max(1, min(w.docs, w.docs // 2))


def build(
    w: Workload, docs: list[dict[str, Any]], partitions: int, blocks: int | None = None
) -> Any:
    import ray.data

    ds: Dataset = ray.data.from_items(docs, override_num_blocks=blocks or blocks_for(w))
    ds = ds.flat_map(SplitRow, fn_constructor_args=(w,), compute=pool(w.split_replicas), num_cpus=0)
    ds = ds.map_batches(
        RenderBatch,
        fn_constructor_args=(w,),
        batch_size=w.render_batch,
        compute=pool(w.render_replicas),
        num_cpus=0,
        batch_format="numpy",
    )
    ds = ds.map_batches(
        ModelBatch,
        fn_constructor_args=(w,),
        batch_size=w.model_batch,
        compute=pool(w.accelerators),
        num_cpus=0,
        resources={"accel": 1},
        batch_format="numpy",
    )
    return ds.groupby("doc", num_partitions=partitions).map_groups(
        WriteGroup,
        fn_constructor_args=(w,),
        compute=pool(w.write_replicas),
        num_cpus=0,
        batch_format="numpy",
    )


def quiet() -> None:
    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    ctx.verbose_stats_logs = False


def run_pair(
    w: Workload, *, warm_runs: int = 1, parallelism: int | None = None
) -> list[Measurement]:
    """A first execution ("cold") and ``warm_runs`` repeated executions.

    ``parallelism`` overrides the number of input blocks (see ``blocks_for``)."""
    import ray

    quiet()
    docs = make_docs(w)
    rows = [asdict(d) for d in docs]
    expected = expected_digests(docs)
    partitions = max(1, int(ray.cluster_resources().get("CPU", 2)))
    out = []
    for i in range(1 + warm_runs):
        started = time.time()
        result = build(w, rows, partitions, parallelism).take_all()
        finished = time.time()
        out.append(
            measure(
                "Ray Data",
                "cold" if i == 0 else "warm",
                [dict(r) for r in result],
                started,
                finished,
                expected,
                w.accelerators,
            )
        )
    return out
