"""Glob URIs through :mod:`pyarrow.fs`: ``s3://bucket/in/*.pdf``, ``/data/**/x?.mp4``.

A glob's *base* is the folder before its first wildcard. A base that does not exist
is most often a typo or a mount that is missing: callers that take sources from a
glob ask for :class:`SourcesNotFound` then, instead of an empty list.

A remote glob may carry filesystem options in its query string
(``s3://bucket/in/*.pdf?endpoint_override=host:port&scheme=http&region=us-east-1``,
the way to reach an S3-compatible server; keys come from the credential chain, never
the URI). The query is no part of the pattern: the base is opened with it, and every
listed file keeps it, so a source opens at the same endpoint
(:mod:`.glob_syntax` says which ``?`` starts a query).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

import pyarrow.fs as pafs

from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.runs.glob_syntax import (
    GLOB_CHARS,
    glob_regex,
    split_glob_query,
    wildcard_base,
)
from airflow_provider_rayorch.runs.s3_listing import s3_pages
from airflow_provider_rayorch.runs.uris import fs_path, open_filesystem

if TYPE_CHECKING:
    from collections.abc import Iterator
    from datetime import datetime

__all__ = [
    "SourcesNotFound",
    "glob_base",
    "glob_files",
    "glob_uris",
    "iter_glob_files",
    "iter_glob_uris",
]

#: The names the run store module re-exports.
_GLOB_CHARS = GLOB_CHARS
_glob_regex = glob_regex


class SourcesNotFound(UsageError):
    """A sources glob's base folder (or a sources path without wildcards) does not exist."""


def _with_query(uri: str, query: str) -> str:
    return f"{uri}?{query}" if query else uri


def glob_base(pattern: str) -> str:
    """The folder before the first wildcard of ``pattern`` (the pattern itself if none),
    with the pattern's query string."""
    path, query = split_glob_query(pattern)
    return _with_query(wildcard_base(path), query)


def glob_files(
    pattern: str, *, missing_ok: bool = True, setting: str = "sources"
) -> list[tuple[str, pafs.FileInfo]]:
    """``(uri, info)`` of every file matching ``pattern``, sorted by URI.

    Each URI keeps the pattern's scheme and query string. ``missing_ok=False``: a base
    folder (or a path without wildcards) that does not exist raises
    :class:`SourcesNotFound` naming it. ``setting`` names the glob's origin in errors.
    """
    return list(iter_glob_files(pattern, missing_ok=missing_ok, setting=setting))


def iter_glob_files(
    pattern: str, *, missing_ok: bool = True, setting: str = "sources"
) -> Iterator[tuple[str, pafs.FileInfo]]:
    """:func:`glob_files`, lazily, in URI order: on S3 a page of keys at a time
    (:mod:`.s3_listing`), elsewhere one folder at a time, so at most a page (or one
    folder's entries) is held."""
    path, query = split_glob_query(pattern)
    base_path = wildcard_base(path)
    base_uri = _with_query(base_path, query)
    fs, base = open_filesystem(base_uri, setting=setting)
    if base_path == path:
        info = fs.get_file_info(base)
        if info.type == pafs.FileType.File:
            yield pattern, info
        elif not missing_ok and info.type == pafs.FileType.NotFound:
            raise SourcesNotFound(f"sources {pattern!r}: no such file")
        return
    full = fs_path(path) if "://" in path else os.path.abspath(path)
    if fs.get_file_info(base).type != pafs.FileType.Directory:
        if missing_ok:
            return
        raise SourcesNotFound(
            f"sources glob {pattern!r}: its folder {base_uri!r} does not exist (or is not a "
            "folder); check the path, the mount or bucket, and the credentials that list it"
        )
    prefix = path[: path.find("://") + 3] if "://" in path else ""
    matcher = glob_regex(full)
    pages = None
    if isinstance(fs, pafs.S3FileSystem):
        pages = s3_pages(base, dict(parse_qsl(query)))
    for info in pages if pages is not None else _walk(fs, base):
        if matcher.fullmatch(info.path):
            yield _with_query(prefix + info.path, query), info


def _walk(fs: pafs.FileSystem, folder: str) -> Iterator[pafs.FileInfo]:
    """The files under ``folder`` in path order, one folder listed at a time: a folder
    sorts as its name plus ``/``, so its files come where a full sort puts them."""
    entries = fs.get_file_info(pafs.FileSelector(folder))
    entries.sort(key=lambda e: e.base_name + ("/" if e.type == pafs.FileType.Directory else ""))
    for entry in entries:
        if entry.type == pafs.FileType.Directory:
            yield from _walk(fs, entry.path)
        elif entry.type == pafs.FileType.File:
            yield entry


def glob_uris(
    pattern: str,
    *,
    modified_after: datetime | None = None,
    modified_before: datetime | None = None,
    missing_ok: bool = True,
) -> list[str]:
    """Files matching a glob (``s3://bucket/in/*.pdf``, ``/data/**/x?.mp4``), sorted.

    ``modified_after`` (inclusive) and ``modified_before`` (exclusive) filter on the
    file's modification time, for example an Airflow data interval. Results keep the
    pattern's scheme and query string, so they can be passed on as sources.
    ``missing_ok=False``: a base folder (or a path without wildcards) that does not
    exist raises :class:`SourcesNotFound` naming it, instead of giving an empty list.
    """
    return list(
        iter_glob_uris(
            pattern,
            modified_after=modified_after,
            modified_before=modified_before,
            missing_ok=missing_ok,
        )
    )


def iter_glob_uris(
    pattern: str,
    *,
    modified_after: datetime | None = None,
    modified_before: datetime | None = None,
    missing_ok: bool = True,
) -> Iterator[str]:
    """:func:`glob_uris`, lazily (one folder's entries held at a time), in the same order."""
    for uri, info in iter_glob_files(pattern, missing_ok=missing_ok):
        mtime = info.mtime
        if mtime is not None and modified_after is not None and mtime < modified_after:
            continue
        if mtime is not None and modified_before is not None and mtime >= modified_before:
            continue
        yield uri
