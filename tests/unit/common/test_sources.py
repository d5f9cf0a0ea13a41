"""An operator's ``sources`` become rows: a glob expanded in name order, a list as
given, a mapping of equally long columns as one row per index."""

from __future__ import annotations

import pytest

from airflow_provider_rayorch.common.sources import resolve_sources


def test_sources_glob_list_and_columns(tmp_path) -> None:
    data = tmp_path / "in"
    data.mkdir()
    for name in ("b.txt", "a.txt"):
        (data / name).write_text("x")
    assert resolve_sources(f"{data}/*.txt") == ([f"{data}/a.txt", f"{data}/b.txt"], 1)
    assert resolve_sources([3, 1]) == ([3, 1], 1)
    assert resolve_sources({"a": [1, 2], "b": ["x", "y"]}) == ([[1, "x"], [2, "y"]], 2)
    assert resolve_sources({"a": [1, 2]}) == ([1, 2], 1)
    with pytest.raises(ValueError, match="differ in length"):
        resolve_sources({"a": [1, 2], "b": ["x"]})
