"""The default RecoveryPolicy never blames a row for another row's exception.

A stage that raises on one row of a batch shared by several sources: on
``ro.run(..., backend="local")`` with the default policy, every other source is
PRESENT with its own value and only the raiser's source ends non-PRESENT, with
its own exception as cause. The same holds for every retrying policy.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import airflow_provider_rayorch.rayorch as ro
from tests.integration.rayorch.raising_rows import DOCS, EXPECTED

FAILED, SUPPRESSED = ro.ItemOutcome.FAILED, ro.ItemOutcome.SUPPRESSED
RP = ro.RecoveryPolicy
RETRYING = [
    pytest.param(None, id="default"),
    pytest.param(RP.retry_batch(max_retries=2), id="retry_batch-2"),
    pytest.param(RP.retry_batch(max_retries=0), id="retry_batch-0"),
    pytest.param(RP.retry_tail(), id="retry_tail"),
    pytest.param(RP.isolate_tail(), id="isolate_tail"),
]


class Seen:
    """Every batch the raising stage ran, in order."""

    batches: ClassVar[list[list[Any]]] = []


@pytest.fixture(autouse=True)
def _clear_seen() -> None:
    Seen.batches = []


class Pages:
    def run(self, docs: list[list[str]]) -> list[list[str]]:
        return [list(doc) for doc in docs]


class RaiseOn:
    """Upper-cases each row; raises for the whole batch when a row holds RAISE."""

    def run(self, rows: list[str]) -> list[str]:
        Seen.batches.append(list(rows))
        for row in rows:
            if "RAISE" in row:
                raise RuntimeError(f"stage raised on purpose for page {row!r}")
        return [row.upper() for row in rows]


def stage(recovery: ro.RecoveryPolicy | None, batch_size: int) -> ro.RayModule:
    options: dict[str, Any] = {"batch_size": batch_size}
    if recovery is not None:
        options["recovery"] = recovery
    return ro.RayModule(RaiseOn).ray_options(**options)


class Documents(ro.Pipeline):
    """doc -> pages -> RaiseOn (one batch across documents) -> the doc's page list."""

    def __init__(self, recovery: ro.RecoveryPolicy | None = None, batch_size: int = 16) -> None:
        self.pages = ro.RayModule(Pages).ray_options(batch_size=8)
        self.read = stage(recovery, batch_size)

    def forward(self, doc: ro.Port) -> ro.Port:
        return ro.F.reduce(self.read(ro.F.expand(self.pages(doc), domain="page")))


class Files(ro.Pipeline):
    def __init__(self, recovery: ro.RecoveryPolicy | None = None, batch_size: int = 16) -> None:
        self.read = stage(recovery, batch_size)

    def forward(self, path: ro.Port) -> ro.Port:
        return self.read(path)


def test_a_raising_page_suppresses_only_its_own_document_under_the_default_policy() -> None:
    result = ro.run(Documents(), DOCS, backend="local")
    assert result.outputs == EXPECTED
    assert ["page RAISE here"] in Seen.batches  # it was blamed only once it raised alone


@pytest.mark.parametrize("recovery", RETRYING)
@pytest.mark.parametrize("batch_size", [2, 3, 16])
def test_only_the_raising_file_fails_with_its_own_cause(
    recovery: ro.RecoveryPolicy | None, batch_size: int
) -> None:
    paths = ["ünï cødé 😀.txt", "RAISE-1.txt", "b.txt", "c.txt", "RAISE-2.txt", "d.txt"]
    result = ro.run(Files(recovery, batch_size), paths, backend="local")
    assert result.outputs == [
        "ÜNÏ CØDÉ 😀.TXT",
        ro.OutputIssue(
            FAILED, "path[1]: RuntimeError: stage raised on purpose for page 'RAISE-1.txt'"
        ),
        "B.TXT",
        "C.TXT",
        ro.OutputIssue(
            FAILED, "path[4]: RuntimeError: stage raised on purpose for page 'RAISE-2.txt'"
        ),
        "D.TXT",
    ]


def test_a_stage_that_always_raises_fails_every_row_alone_with_its_own_cause() -> None:
    class Always:
        def run(self, rows: list[str]) -> list[str]:
            Seen.batches.append(list(rows))
            raise RuntimeError(f"down for {rows[0]}")

    class P(ro.Pipeline):
        def __init__(self) -> None:
            self.read = ro.RayModule(Always).ray_options(batch_size=4)

        def forward(self, path: ro.Port) -> ro.Port:
            return self.read(path)

    rows = list("abcde")
    result = ro.run(P(), rows, backend="local")
    assert result.outputs == [
        ro.OutputIssue(FAILED, f"path[{i}]: RuntimeError: down for {row}")
        for i, row in enumerate(rows)
    ]
    assert {b[0] for b in Seen.batches if len(b) == 1} == set(rows)  # each ran alone
