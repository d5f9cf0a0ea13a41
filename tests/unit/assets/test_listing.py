"""list_files: what a glob matches on a pyarrow filesystem, with each file's size."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_rayorch.assets.listing import ListedFile, list_files
from airflow_provider_rayorch.runs.store import glob_uris

if TYPE_CHECKING:
    from pathlib import Path


def test_lists_the_matching_files_with_their_sizes_sorted(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("bb")
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "c.pdf").write_text("ccc")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.txt").write_text("dddd")
    assert list_files(f"{tmp_path}/*.txt") == [
        ListedFile(str(tmp_path / "a.txt"), 1),
        ListedFile(str(tmp_path / "b.txt"), 2),
    ]
    assert [f.uri for f in list_files(f"{tmp_path}/**/*.txt")] == [
        str(tmp_path / "a.txt"),
        str(tmp_path / "b.txt"),
        str(tmp_path / "sub" / "d.txt"),
    ]


def test_matches_exactly_what_the_operator_expands(tmp_path: Path) -> None:
    """The trigger's files are the sources RayOrchOperator would take from the same glob."""
    for name in ("x1.txt", "x22.txt", "y.txt", "x3.md"):
        (tmp_path / name).write_text(name)
    for pattern in (f"{tmp_path}/x?.txt", f"{tmp_path}/[xy]*", f"file://{tmp_path}/x*.txt"):
        assert [f.uri for f in list_files(pattern)] == glob_uris(pattern)


def test_a_uri_keeps_its_scheme(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    assert list_files(f"file://{tmp_path}/*.txt") == [ListedFile(f"file://{tmp_path}/a.txt", 1)]


def test_a_missing_folder_lists_nothing(tmp_path: Path) -> None:
    assert list_files(f"{tmp_path}/not-yet/*.txt") == []
