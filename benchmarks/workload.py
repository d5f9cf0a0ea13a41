"""The cost model of the emulated workloads and the UDFs every system runs.

Workload 1 (BENCHMARKS.md): ``N`` documents with lognormal page counts. Each
document is split into its pages (one cheap Call per document), every page is
rendered (a CPU-like stage), run through a page model (an emulated accelerator:
``fixed + per_item * n`` seconds per batch, slept inside an actor that holds one
unit of the custom ``accel`` resource), and the pages of a document are
assembled and written in ordinal order (one Grain per document).

Every stage's cost is slept, not burned, so 16 emulated accelerators and their
CPU stages fit on 2 cores and the figures measure scheduling, not CPU
contention. The same UDF classes are wrapped by each system's adapter; only the
data plumbing differs between systems.

Every page row carries the batch it ran in (``bs``: size, ``bt``: seconds), so
accelerator busy time and batch fill are measured the same way in every system.
"""

from __future__ import annotations

import hashlib
import math
import os
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "CostModel",
    "Doc",
    "PageModel",
    "Render",
    "Split",
    "Workload",
    "Write",
    "digest",
    "ideal_seconds",
    "make_docs",
]

#: Documents whose pages return a GroupFailure (workload 5) carry this cause.
POISON = "poisoned page"


@dataclass(frozen=True)
class CostModel:
    """Seconds per batch: ``fixed + per_item * rows`` for each stage."""

    # Per-document stages have no fixed cost, so a peer that calls them row by
    # row (Ray Data's flat_map and map_groups) pays the same as a batched call.
    split_fixed: float = 0.0
    split_per_doc: float = 0.0005
    render_fixed: float = 0.001
    render_per_page: float = 0.002
    model_fixed: float = 0.020
    model_per_page: float = 0.004
    write_fixed: float = 0.0
    write_per_doc: float = 0.002
    write_per_page: float = 0.0001

    def split(self, docs: int) -> float:
        return self.split_fixed + self.split_per_doc * docs

    def render(self, pages: int) -> float:
        return self.render_fixed + self.render_per_page * pages

    def model(self, pages: int) -> float:
        return self.model_fixed + self.model_per_page * pages

    def write(self, docs: int, pages: int) -> float:
        return self.write_fixed + self.write_per_doc * docs + self.write_per_page * pages

    @classmethod
    def gpu_like(cls) -> CostModel:
        """Costs closer to a real page model on a GPU (about 0.1 s per page), for
        the simulator's extrapolation: the paper's MinerU run spends seconds per page."""
        return cls(
            split_per_doc=0.005,
            render_fixed=0.005,
            render_per_page=0.02,
            model_fixed=0.2,
            model_per_page=0.1,
            write_per_doc=0.02,
            write_per_page=0.001,
        )

    @classmethod
    def zero(cls) -> CostModel:
        """Every stage free: what is left is the engine's own overhead."""
        return cls(*(0.0 for _ in range(9)))


@dataclass(frozen=True)
class Workload:
    """A workload-1 shaped run: the data, the costs and the physical layout."""

    docs: int = 300
    mean_pages: float = 20.0
    sigma: float = 1.0
    max_pages: int = 400
    seed: int = 7
    accelerators: int = 8
    split_replicas: int = 1
    render_replicas: int = 4
    write_replicas: int = 1
    split_batch: int = 8
    render_batch: int = 8
    model_batch: int = 16
    write_batch: int = 4
    input_batch_size: int = 32
    max_active_input_batches: int = 4
    #: Share of documents whose pages fail with a GroupFailure (workload 5).
    poison_share: float = 0.0
    #: Ordinal of the first poisoned page of a poisoned document (its siblings
    #: after it are the work containment saves).
    poison_ordinal: int = 1
    cost: CostModel = field(default_factory=CostModel)

    def scaled(self, accelerators: int) -> Workload:
        """The same data on ``accelerators`` page-model actors, CPU stages scaled along."""
        from dataclasses import replace

        return replace(
            self,
            accelerators=accelerators,
            split_replicas=max(1, accelerators // 16),
            render_replicas=max(1, math.ceil(accelerators / 2)),
            write_replicas=max(1, accelerators // 8),
            split_batch=max(8, accelerators // 2),
            input_batch_size=max(32, 4 * accelerators),
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Doc:
    doc: int
    pages: int
    poisoned: bool


def make_docs(w: Workload) -> list[Doc]:
    """Long-tailed page counts (lognormal), the same for every system given ``seed``."""
    rng = random.Random(w.seed)
    mu = math.log(w.mean_pages) - w.sigma**2 / 2
    docs = []
    for i in range(w.docs):
        pages = min(w.max_pages, max(1, round(rng.lognormvariate(mu, w.sigma))))
        poisoned = rng.random() < w.poison_share
        docs.append(Doc(i, pages, poisoned and pages > w.poison_ordinal))
    return docs


def digest(doc: int, ordinals: list[int]) -> str:
    """An order-sensitive fingerprint of a document's gathered pages."""
    text = f"{doc}:" + ",".join(map(str, ordinals))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


# -- UDFs: plain batch classes; each system's adapter calls ``run`` -----------------
class Split:
    """A document -> its pages, as ``{"doc", "ord", "poison"}`` rows."""

    def __init__(self, cost: CostModel) -> None:
        self.cost = cost

    def run(self, docs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        time.sleep(self.cost.split(len(docs)))
        return [
            [{"doc": d["doc"], "ord": k, "poison": d["poisoned"]} for k in range(d["pages"])]
            for d in docs
        ]


class Render:
    """The CPU-like page stage."""

    def __init__(self, cost: CostModel) -> None:
        self.cost = cost

    def run(self, pages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        time.sleep(self.cost.render(len(pages)))
        return [{**p, "img": p["ord"] * 2 + 1} for p in pages]


class PageModel:
    """The emulated accelerator: ``fixed + per_page * n`` seconds per batch.

    ``failure`` builds the row of a poisoned page (``None``: poison is ignored).
    """

    def __init__(self, cost: CostModel, failure: Any = None, poison_ordinal: int = 1) -> None:
        self.cost = cost
        self.failure = failure
        self.poison_ordinal = poison_ordinal
        self.pid = os.getpid()

    def run(self, pages: list[dict[str, Any]]) -> list[Any]:
        t0 = time.perf_counter()
        time.sleep(self.cost.model(len(pages)))
        bt = time.perf_counter() - t0
        n = len(pages)
        out: list[Any] = []
        for p in pages:
            if self.failure is not None and p["poison"] and p["ord"] >= self.poison_ordinal:
                out.append(self.failure(POISON))
            else:
                out.append({"doc": p["doc"], "ord": p["ord"], "bs": n, "bt": bt, "pid": self.pid})
        return out


class Write:
    """Assemble a document from its pages in ordinal order and 'write' it."""

    def __init__(self, cost: CostModel) -> None:
        self.cost = cost

    def run(self, page_lists: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
        pages = sum(len(p) for p in page_lists)
        time.sleep(self.cost.write(len(page_lists), pages))
        now = time.time()
        return [summarize(p, now) for p in page_lists]


def summarize(pages: list[dict[str, Any]], now: float) -> dict[str, Any]:
    """One document's output: its digest, its pages' accelerator shares, when done."""
    doc = pages[0]["doc"] if pages else -1
    return {
        "doc": doc,
        "pages": len(pages),
        "digest": digest(doc, [p["ord"] for p in pages]),
        "busy": sum(p["bt"] / p["bs"] for p in pages),
        "batches": sum(1.0 / p["bs"] for p in pages),
        "t_done": now,
        "pids": sorted({p["pid"] for p in pages}),
    }


# -- the physical limit ---------------------------------------------------------
def ideal_seconds(w: Workload, docs: list[Doc] | None = None) -> dict[str, float]:
    """Makespan lower bound from the cost model: the busiest stage's work spread
    over its workers with full batches, and the longest single document's path."""
    docs = docs if docs is not None else make_docs(w)
    c = w.cost
    pages = sum(d.pages for d in docs)

    def stage(n: int, batch: int, fixed: float, per: float, workers: int) -> float:
        return (math.ceil(n / batch) * fixed + n * per) / workers

    split = stage(len(docs), w.split_batch, c.split_fixed, c.split_per_doc, w.split_replicas)
    render = stage(pages, w.render_batch, c.render_fixed, c.render_per_page, w.render_replicas)
    model = stage(pages, w.model_batch, c.model_fixed, c.model_per_page, w.accelerators)
    write = (
        math.ceil(len(docs) / w.write_batch) * c.write_fixed
        + len(docs) * c.write_per_doc
        + pages * c.write_per_page
    ) / w.write_replicas
    longest = max((d.pages for d in docs), default=0)
    path = (
        c.split(1)
        + c.render(min(longest, w.render_batch))
        + c.model(min(longest, w.model_batch))
        + c.write(1, longest)
    )
    bound = max(split, render, model, write, path)
    return {
        "bound_s": bound,
        "split_s": split,
        "render_s": render,
        "model_s": model,
        "write_s": write,
        "critical_path_s": path,
        "pages": float(pages),
    }
