"""List the files a ``pyarrow.fs`` glob matches, with their sizes and mtimes.

The matching rules are the run store's (``glob_uris``): ``*`` and ``?`` stay within
one path segment, ``**/`` spans several, and results keep the pattern's scheme and
query string, so a listed file is exactly a source ``RayOrchOperator`` would take
from that glob.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pyarrow.fs as pafs

from airflow_provider_rayorch.assets.watch_state import ListedFile
from airflow_provider_rayorch.runs.glob_syntax import split_glob_query, wildcard_base
from airflow_provider_rayorch.runs.globbing import glob_files
from airflow_provider_rayorch.runs.uris import fs_path, open_filesystem

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["list_files", "stat_files"]


def _listed(uri: str, info: pafs.FileInfo) -> ListedFile:
    mtime_ns = info.mtime_ns
    return ListedFile(uri, int(info.size or 0), None if mtime_ns is None else mtime_ns / 1e9)


def list_files(uri_glob: str) -> list[ListedFile]:
    """Files matching ``uri_glob``, sorted by URI; a folder that does not exist is empty."""
    return [_listed(uri, info) for uri, info in glob_files(uri_glob, setting="uri_glob")]


def stat_files(uri_glob: str, uris: Sequence[str]) -> list[ListedFile]:
    """Size and mtime of ``uris`` (files ``list_files(uri_glob)`` listed), in one call;
    a file that is gone since is left out."""
    if not uris:
        return []
    path, query = split_glob_query(uri_glob)
    base = wildcard_base(path)
    fs, _ = open_filesystem(f"{base}?{query}" if query else base, setting="uri_glob")
    paths = []
    for uri in uris:
        file_path, _ = split_glob_query(uri)
        paths.append(fs_path(file_path) if "://" in file_path else os.path.abspath(file_path))
    return [
        _listed(uri, info)
        for uri, info in zip(uris, fs.get_file_info(paths), strict=True)
        if info.type == pafs.FileType.File
    ]
