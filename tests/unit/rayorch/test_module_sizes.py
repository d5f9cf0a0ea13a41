"""No engine file is over 500 lines: small modules with one responsibility each."""

from __future__ import annotations

from pathlib import Path

import airflow_provider_rayorch.rayorch as ro

ENGINE = Path(ro.__file__).parent
MAX_LINES = 500


def test_no_engine_file_is_over_500_lines() -> None:
    sizes = {
        str(path.relative_to(ENGINE)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(ENGINE.rglob("*.py"))
    }
    assert sizes, f"no engine source found under {ENGINE}"
    over = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not over, (
        f"engine files over {MAX_LINES} lines (split them by responsibility): "
        + ", ".join(f"{name} ({n})" for name, n in sorted(over.items()))
    )
