"""List the files a ``pyarrow.fs`` glob matches, with their sizes, in one listing.

The matching rules are the run store's (``glob_uris``): ``*`` and ``?`` stay within
one path segment, ``**/`` spans several, and results keep the pattern's scheme, so
a listed file is exactly a source ``RayOrchOperator`` would take from that glob.
"""

from __future__ import annotations

import os

import pyarrow.fs as pafs

from airflow_provider_rayorch.assets.watch_state import ListedFile, has_glob_pattern
from airflow_provider_rayorch.runs.globbing import _GLOB_CHARS, _glob_regex
from airflow_provider_rayorch.runs.uris import open_filesystem

__all__ = ["ListedFile", "list_files"]


def list_files(uri_glob: str) -> list[ListedFile]:
    """Files matching ``uri_glob``, sorted by URI; a folder that does not exist is empty."""
    if not has_glob_pattern(uri_glob):
        fs, path = open_filesystem(uri_glob, setting="uri_glob")
        info = fs.get_file_info(path)
        return [ListedFile(uri_glob, int(info.size or 0))] if info.is_file else []
    cut = min(uri_glob.find(c) for c in _GLOB_CHARS if c in uri_glob)
    base_uri = uri_glob[: uri_glob.rfind("/", 0, cut) + 1] or "."
    fs, base = open_filesystem(base_uri, setting="uri_glob")
    if "://" in uri_glob:
        _, full = open_filesystem(uri_glob, setting="uri_glob")
        prefix = uri_glob[: uri_glob.find("://") + 3]
    else:
        full, prefix = os.path.abspath(uri_glob), ""
    if fs.get_file_info(base).type != pafs.FileType.Directory:
        return []
    matcher = _glob_regex(full)
    found = [
        ListedFile(prefix + info.path, int(info.size or 0))
        for info in fs.get_file_info(pafs.FileSelector(base, recursive=True))
        if info.type == pafs.FileType.File and matcher.fullmatch(info.path)
    ]
    return sorted(found, key=lambda f: f.uri)
