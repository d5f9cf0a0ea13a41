"""UDFs and a pipeline whose page stage raises on one page (importable by Ray workers)."""

from __future__ import annotations

from typing import Any

import airflow_provider_rayorch.rayorch as ro


class Pages:
    def run(self, docs: list[list[str]]) -> list[list[str]]:
        return [list(doc) for doc in docs]


class RaiseOn:
    """Upper-cases each row; the whole batch raises when one of its rows holds RAISE."""

    def run(self, rows: list[str]) -> list[str]:
        for row in rows:
            if "RAISE" in row:
                raise RuntimeError(f"stage raised on purpose for page {row!r}")
        return [row.upper() for row in rows]


class Documents(ro.Pipeline):
    """doc -> pages -> RaiseOn (pages of every document share its batches) -> reduce.

    ``read`` keeps the default RecoveryPolicy unless ``recovery`` is given."""

    def __init__(self, recovery: ro.RecoveryPolicy | None = None, batch_size: int = 16) -> None:
        options: dict[str, Any] = {"batch_size": batch_size}
        if recovery is not None:
            options["recovery"] = recovery
        self.pages = ro.RayModule(Pages).ray_options(batch_size=8)
        self.read = ro.RayModule(RaiseOn).ray_options(**options)

    def forward(self, doc: ro.Port) -> ro.Port:
        return ro.F.reduce(self.read(ro.F.expand(self.pages(doc), domain="page")))


#: Six documents of pages; only document 5 holds a page that raises.
DOCS = [["a", "b"], ["c"], ["d", "e", "f"], ["g"], ["h", "i"], ["j", "page RAISE here", "k"]]
#: Their outputs under the default policy: the raiser's document alone is SUPPRESSED.
CAUSE = "doc[5]/page[1]: RuntimeError: stage raised on purpose for page 'page RAISE here'"
EXPECTED = [
    ["A", "B"],
    ["C"],
    ["D", "E", "F"],
    ["G"],
    ["H", "I"],
    ro.OutputIssue(ro.ItemOutcome.SUPPRESSED, CAUSE),
]
