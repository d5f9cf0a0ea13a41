"""The report renders the committed results.json into the committed README, so a
change to the renderers that alters the document shows here (regenerate both with
the suite, or with ``write_report``, when the change is meant)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.report import write_report

DOCS = Path(__file__).resolve().parents[3] / "docs" / "benchmarks"


def _without_plots(text: str) -> str:
    """The README without its closing ``## Plots`` list (plots need matplotlib, which
    CI does not install)."""
    return text.partition("## Plots\n")[0]


def test_the_committed_results_render_to_the_committed_readme(tmp_path: Path) -> None:
    results = json.loads((DOCS / "results.json").read_text(encoding="utf-8"))
    write_report(results, tmp_path, plots=False)
    rendered = (tmp_path / "README.md").read_text(encoding="utf-8")
    committed = (DOCS / "README.md").read_text(encoding="utf-8")
    assert rendered == _without_plots(committed)
