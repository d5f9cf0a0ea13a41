"""cosmos-xenna ``Stage``s for workloads 1, 3 and 4 (imported only in Xenna's venv).

Each stage wraps the same UDF classes every system runs; the batch size and
the CPU share come from the runner. A stage's ``process_data`` takes a list of
``stage_batch_size`` items and returns a list of items (any length: that is how
a document fans out into pages). The ``Gather*`` stages are the stateful
regrouping Xenna users write in place of a keyed gather: run on one worker,
they hold items until their parent is complete (each item carries its parent's
child count) and emit the parent then.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import cosmos_xenna.pipelines.v1 as xenna

from ..nested import DetectTables, SplitPages, TableModel, WriteDoc
from ..workload import CostModel, PageModel, Render, Split, Write

__all__ = [
    "ExpandSources",
    "GatherDocs",
    "GatherSources",
    "GatherTables",
    "NoOp",
    "PageModelStage",
    "RenderPages",
    "SplitDocs",
    "SplitNested",
    "TableModelStage",
    "TablesOfPages",
]


class _Sized(xenna.Stage):
    """The batch size and CPU share every stage below is given."""

    def __init__(self, batch: int, cpus: float) -> None:
        self.batch = batch
        self.cpus = cpus

    @property
    def stage_batch_size(self) -> int:
        return self.batch

    @property
    def required_resources(self) -> xenna.Resources:
        return xenna.Resources(cpus=self.cpus, gpus=0)


# -- workload 1 ------------------------------------------------------------------------
class SplitDocs(_Sized):
    """A document -> its pages, each carrying the document's page count ``n``."""

    def __init__(self, cost: CostModel, batch: int, cpus: float) -> None:
        super().__init__(batch, cpus)
        self.udf = Split(cost)

    def process_data(self, in_data: list[Any]) -> list[Any] | None:
        return [{**p, "n": len(ps)} for ps in self.udf.run(in_data) for p in ps]


class RenderPages(_Sized):
    def __init__(self, cost: CostModel, batch: int, cpus: float) -> None:
        super().__init__(batch, cpus)
        self.udf = Render(cost)

    def process_data(self, in_data: list[Any]) -> list[Any] | None:
        return self.udf.run(in_data)


class PageModelStage(_Sized):
    """The emulated accelerator: its pinned workers stand in for the ``accel`` units."""

    def __init__(self, cost: CostModel, batch: int, cpus: float) -> None:
        super().__init__(batch, cpus)
        self.cost = cost

    def setup(self, worker_metadata: xenna.WorkerMetadata) -> None:
        self.udf = PageModel(self.cost)  # in the worker: records its pid

    def process_data(self, in_data: list[Any]) -> list[Any] | None:
        out = self.udf.run(in_data)
        return [{**o, "n": p["n"]} for o, p in zip(out, in_data, strict=True)]


class GatherDocs(_Sized):
    """Holds pages until their document is complete, then writes it (ordinal order)."""

    def __init__(self, cost: CostModel, batch: int, cpus: float) -> None:
        super().__init__(batch, cpus)
        self.udf = Write(cost)
        self.held: dict[int, list[dict[str, Any]]] = defaultdict(list)

    def process_data(self, in_data: list[Any]) -> list[Any] | None:
        done = []
        for page in in_data:
            pages = self.held[page["doc"]]
            pages.append(page)
            if len(pages) == page["n"]:
                done.append(sorted(self.held.pop(page["doc"]), key=lambda p: p["ord"]))
        return self.udf.run(done) if done else []


# -- workload 3 ------------------------------------------------------------------------
class SplitNested(_Sized):
    def __init__(self, cost: CostModel, batch: int, cpus: float) -> None:
        super().__init__(batch, cpus)
        self.udf = SplitPages(cost)

    def process_data(self, in_data: list[Any]) -> list[Any] | None:
        return [{**p, "n": len(ps)} for ps in self.udf.run(in_data) for p in ps]


class TablesOfPages(_Sized):
    """Page -> its tables, each carrying the page's table count ``nt``; a page
    without tables travels as one placeholder (``t = -1``, ``nt = 0``)."""

    def __init__(self, cost: CostModel, batch: int, cpus: float) -> None:
        super().__init__(batch, cpus)
        self.udf = DetectTables(cost)

    def process_data(self, in_data: list[Any]) -> list[Any] | None:
        out = []
        for page, tables in zip(in_data, self.udf.run(in_data), strict=True):
            marker = {"doc": page["doc"], "ord": page["ord"], "n": page["n"]}
            out += [{**t, "n": page["n"], "nt": len(tables)} for t in tables] or [
                {**marker, "t": -1, "nt": 0}
            ]
        return out


class TableModelStage(_Sized):
    def __init__(self, cost: CostModel, batch: int, cpus: float) -> None:
        super().__init__(batch, cpus)
        self.udf = TableModel(cost)

    def process_data(self, in_data: list[Any]) -> list[Any] | None:
        return self.udf.run(in_data)


class GatherTables(_Sized):
    """Tables -> pages -> documents in one stateful stage; writes complete documents."""

    def __init__(self, cost: CostModel, batch: int, cpus: float) -> None:
        super().__init__(batch, cpus)
        self.udf = WriteDoc(cost)
        self.tables: dict[tuple[int, int], list[int]] = defaultdict(list)
        self.pages: dict[int, list[dict[str, Any]]] = defaultdict(list)

    def process_data(self, in_data: list[Any]) -> list[Any] | None:
        done = []
        for t in in_data:
            key = (t["doc"], t["ord"])
            if t["t"] >= 0:
                self.tables[key].append(t["t"])
            if len(self.tables[key]) < t["nt"]:
                continue
            page = {"doc": t["doc"], "ord": t["ord"], "tables": sorted(self.tables.pop(key, []))}
            pages = self.pages[t["doc"]]
            pages.append(page)
            if len(pages) == t["n"]:
                done.append(sorted(self.pages.pop(t["doc"]), key=lambda p: p["ord"]))
        return self.udf.run(done) if done else []


# -- workload 4 ------------------------------------------------------------------------
class ExpandSources(_Sized):
    def process_data(self, in_data: list[Any]) -> list[Any] | None:
        return [
            {"src": r["src"], "ord": k, "v": k, "n": r["n"]} for r in in_data for k in range(r["n"])
        ]


class NoOp(_Sized):
    def process_data(self, in_data: list[Any]) -> list[Any] | None:
        return in_data


class GatherSources(_Sized):
    """Holds children until their source is complete, then emits its values in order."""

    def __init__(self, batch: int, cpus: float) -> None:
        super().__init__(batch, cpus)
        self.held: dict[int, list[dict[str, Any]]] = defaultdict(list)

    def process_data(self, in_data: list[Any]) -> list[Any] | None:
        done = []
        for c in in_data:
            kids = self.held[c["src"]]
            kids.append(c)
            if len(kids) == c["n"]:
                kids = sorted(self.held.pop(c["src"]), key=lambda k: k["ord"])
                done.append({"src": c["src"], "values": [k["v"] for k in kids]})
        return done
