"""Workload 4 on Ray Data and Daft: the no-op fan-out, gathered back per source.

The same shape as ``noop_throughput`` (each source is a list of children; every
child passes a no-op batch UDF on ``replicas`` actors of 1 CPU with batch
``batch_size``; the children are gathered back per source in ordinal order), written
as each peer's docs recommend: Ray Data ``flat_map`` -> ``map_batches`` on an actor
pool -> ``groupby(source).map_groups`` sorting by ordinal; Daft ``explode`` ->
``@daft.cls`` batch UDF -> ``groupby().agg(list_agg)``, the lists put in ordinal
order before they are compared. Grains per second count the children. "cold" is a
first execution in this process, "warm" a second (both peers start their actors on
every execution).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ray.data import Dataset

__all__ = ["run_daft", "run_raydata"]


def _source_rows(sources: list[list[int]]) -> list[dict[str, Any]]:
    return [{"src": i, "n": len(s)} for i, s in enumerate(sources)]


def _check(gathered: dict[int, list[int]], sources: list[list[int]]) -> bool:
    return len(gathered) == len(sources) and all(
        gathered.get(i) == s for i, s in enumerate(sources)
    )


# -- Ray Data -------------------------------------------------------------------------
def _expand(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"src": row["src"], "ord": k, "v": k} for k in range(row["n"])]


class _NoOpBatch:
    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return batch


def _gather(group: dict[str, np.ndarray]) -> dict[str, Any]:
    order = np.argsort(group["ord"], kind="stable")
    return {"src": group["src"][:1], "values": [group["v"][order].tolist()]}


def run_raydata(
    sources: list[list[int]], *, batch_size: int, replicas: int, blocks: int
) -> dict[str, Any]:
    """A cold and a warm execution; the figures and whether the gathers are right."""
    import ray
    import ray.data

    from .systems.raydata import pool, quiet

    quiet()
    parts = max(1, int(ray.cluster_resources().get("CPU", 2)))
    grains = sum(len(s) for s in sources)
    out: dict[str, Any] = {}
    ok = True
    for mode in ("cold", "warm"):
        t = time.perf_counter()
        ds: Dataset = ray.data.from_items(_source_rows(sources), override_num_blocks=blocks)
        # Expansion and gather reserve no CPU, as in this engine: the two no-op actors
        # hold both CPUs of a 2-CPU node, and tasks reserving one would never run.
        ds = ds.flat_map(_expand, num_cpus=0)
        ds = ds.map_batches(
            _NoOpBatch,
            batch_size=batch_size,
            compute=pool(replicas),
            num_cpus=1,
            batch_format="numpy",
        )
        ds = ds.groupby("src", num_partitions=parts).map_groups(
            _gather, num_cpus=0, batch_format="numpy"
        )
        rows = ds.take_all()
        seconds = time.perf_counter() - t
        ok = ok and _check({int(r["src"]): list(r["values"]) for r in rows}, sources)
        out[f"{mode}_s"] = seconds
        out[f"{mode}_grains_per_s"] = grains / seconds
    out["correct"] = ok
    return out


# -- Daft -------------------------------------------------------------------------------
def run_daft(
    sources: list[list[int]], *, batch_size: int, replicas: int, partitions: int
) -> dict[str, Any]:
    """A cold and a warm collect; the figures and whether the gathers are right."""
    import daft
    from daft import DataType, col

    from .systems.daft import use_ray

    use_ray()

    @daft.cls(max_concurrency=replicas, cpus=1, use_process=True)
    class NoOp:
        @daft.method.batch(return_dtype=DataType.int64(), batch_size=batch_size)
        def run(self, v: Any) -> Any:
            return v

    grains = sum(len(s) for s in sources)
    rows = [{"src": i, "v": list(s), "ord": list(range(len(s)))} for i, s in enumerate(sources)]
    out: dict[str, Any] = {}
    ok = True
    for mode in ("cold", "warm"):
        t = time.perf_counter()
        df = daft.from_pylist(rows).into_partitions(partitions).explode("v", "ord")
        df = df.with_column("w", NoOp().run(col("v")))
        df = df.groupby("src").agg(col("ord").list_agg(), col("w").list_agg())
        gathered = {
            r["src"]: [w for _, w in sorted(zip(r["ord"], r["w"], strict=True))]
            for r in df.to_pylist()
        }
        seconds = time.perf_counter() - t
        ok = ok and _check(gathered, sources)
        out[f"{mode}_s"] = seconds
        out[f"{mode}_grains_per_s"] = grains / seconds
    out["correct"] = ok
    return out
