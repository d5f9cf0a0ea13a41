"""list_files and stat_files: what a glob matches on a pyarrow filesystem, with each
file's size and mtime; complete_on_sight: which stores list only complete uploads."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.assets.listing import ListedFile, list_files, stat_files
from airflow_provider_rayorch.assets.watch_state import complete_on_sight
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


def test_each_listed_file_carries_its_modification_time(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("a")
    os.utime(path, (1_000_000_000, 1_000_000_123))
    (listed,) = list_files(f"{tmp_path}/*.txt")
    assert listed.mtime == 1_000_000_123


def test_stat_files_reads_only_the_named_files_and_drops_those_gone(tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(name * 2)
    pattern = f"file://{tmp_path}/*.txt"
    a, _, c = (f.uri for f in list_files(pattern))
    (tmp_path / "c.txt").unlink()
    (tmp_path / "a.txt").write_text("longer now")
    assert stat_files(pattern, [a, c]) == [ListedFile(a, 10)]
    assert stat_files(pattern, []) == []


@pytest.mark.parametrize(
    ("uri_glob", "complete"),
    [
        pytest.param("s3://bucket/in/*.pdf?endpoint_override=h:9000", True, id="s3"),
        pytest.param("gs://bucket/in/*.pdf", True, id="gcs"),
        pytest.param("abfs://container/in/*.pdf", True, id="azure"),
        pytest.param("/data/in/*.pdf", False, id="local-path"),
        pytest.param("file:///data/in/*.pdf", False, id="file-uri"),
        pytest.param("hdfs://namenode/in/*.pdf", False, id="hdfs"),
    ],
)
def test_only_object_stores_list_complete_uploads(uri_glob: str, complete: bool) -> None:
    assert complete_on_sight(uri_glob) is complete
