"""Run-store URIs: open one through :mod:`pyarrow.fs` with options, and join paths.

A run store is a local path or a URI (``file://``, ``s3://``, ``gs://``, ...). pyarrow
also reads filesystem options from a URI's query string
(``s3://bucket/runs?endpoint_override=...``); paths are always joined before the
query, never after it. Options belong in ``run_store_options`` (the connection's
extra), which this module turns into the filesystem's keyword arguments.
"""

from __future__ import annotations

import os
import posixpath
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import pyarrow.fs as pafs

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["is_local", "join_uri", "open_filesystem"]


def is_local(uri: str) -> bool:
    """A plain path (no scheme): the local filesystem."""
    return "://" not in uri


def join_uri(uri: str, *parts: str) -> str:
    """``uri`` with ``parts`` appended to its path, before any query string."""
    if is_local(uri):
        return os.path.join(uri, *parts)
    split = urlsplit(uri)
    path = posixpath.join(split.path.rstrip("/") or "/", *parts) if parts else split.path
    if not split.path and parts:  # s3://bucket?x=1 has its bucket in netloc, no path
        path = "/" + posixpath.join(*parts)
    return urlunsplit((split.scheme, split.netloc, path, split.query, split.fragment))


def open_filesystem(
    uri: str, options: Mapping[str, Any] | None = None
) -> tuple[pafs.FileSystem, str]:
    """The filesystem and the root path inside it that ``uri`` names.

    ``options`` are the filesystem's keyword arguments (``endpoint_override``,
    ``region``, ...); they win over the same options in the URI's query string.
    """
    if is_local(uri):
        return pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(uri))
    fs, path = pafs.FileSystem.from_uri(uri)
    if options:
        fs = _with_options(uri, fs, dict(options))
    return fs, path.rstrip("/") or "/"


def _with_options(uri: str, fs: pafs.FileSystem, options: dict[str, Any]) -> pafs.FileSystem:
    """The same kind of filesystem as ``fs``, built with the query's and ``options``'s
    keyword arguments."""
    query = dict(pair.split("=", 1) for pair in urlsplit(uri).query.split("&") if "=" in pair)
    kwargs: dict[str, Any] = {**query, **options}
    if isinstance(fs, pafs.S3FileSystem):
        return pafs.S3FileSystem(**kwargs)
    if isinstance(fs, pafs.GcsFileSystem):
        return pafs.GcsFileSystem(**kwargs)
    return fs
