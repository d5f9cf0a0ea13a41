"""No file of the benchmark harness is over 500 lines: one module per thing it
measures or renders, as in the package."""

from __future__ import annotations

from pathlib import Path

HARNESS = Path(__file__).resolve().parents[3] / "benchmarks"
MAX_LINES = 500


def test_no_benchmark_file_is_over_500_lines() -> None:
    sizes = {
        str(path.relative_to(HARNESS)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(HARNESS.rglob("*.py"))
    }
    assert "suite.py" in sizes, f"the harness is not where this test looks: {HARNESS}"
    over = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not over, (
        f"benchmark files over {MAX_LINES} lines (split them by what they measure or "
        "render): " + ", ".join(f"{name} ({n})" for name, n in sorted(over.items()))
    )
