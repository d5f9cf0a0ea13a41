"""On Ray, the default RecoveryPolicy blames a raising page on its own document only."""

from __future__ import annotations

import pytest

import airflow_provider_rayorch.rayorch as ro

from .raising_rows import DOCS, EXPECTED, Documents

pytestmark = pytest.mark.usefixtures("no_actors_left")


@pytest.mark.timeout(180)
def test_a_raising_page_suppresses_only_its_own_document_under_the_default_policy() -> None:
    result = ro.run(Documents(), DOCS, backend="ray")
    assert result.outputs == EXPECTED
    summary = result.lineage()
    counts = dict(total=6, present=5, dropped=0, failed=0, suppressed=1)
    assert summary["sources"] == counts
    assert [f["source"] for f in summary["failures"]] == [5]
