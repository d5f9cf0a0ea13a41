"""No file in the package is over 500 lines: small modules with one responsibility
each (one lint for the whole package, not only the engine)."""

from __future__ import annotations

from pathlib import Path

import airflow_provider_rayorch

PACKAGE = Path(airflow_provider_rayorch.__file__).parent
MAX_LINES = 500


def test_no_package_file_is_over_500_lines() -> None:
    sizes = {
        str(path.relative_to(PACKAGE)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(PACKAGE.rglob("*.py"))
    }
    assert len(sizes) > 50, f"too few sources found under {PACKAGE}"
    over = {name: n for name, n in sizes.items() if n > MAX_LINES}
    listed = ", ".join(f"{name} ({n})" for name, n in sorted(over.items()))
    assert not over, f"files over {MAX_LINES} lines (split them by responsibility): {listed}"
