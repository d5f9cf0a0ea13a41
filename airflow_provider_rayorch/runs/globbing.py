"""Glob URIs through :mod:`pyarrow.fs`: ``s3://bucket/in/*.pdf``, ``/data/**/x?.mp4``.

A glob's *base* is the folder before its first wildcard. A base that does not exist
is most often a typo or a mount that is missing: callers that take sources from a
glob ask for :class:`SourcesNotFound` then, instead of an empty list.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import pyarrow.fs as pafs

from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.runs.uris import open_filesystem

if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["SourcesNotFound", "glob_base", "glob_uris"]


class SourcesNotFound(UsageError):
    """A sources glob's base folder (or a sources path without wildcards) does not exist."""


def glob_base(pattern: str) -> str:
    """The folder before the first wildcard of ``pattern`` (the pattern itself if none)."""
    cut = min((pattern.find(c) for c in _GLOB_CHARS if c in pattern), default=-1)
    if cut < 0:
        return pattern
    return pattern[: pattern.rfind("/", 0, cut) + 1] or "."


_GLOB_CHARS = "*?["


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
    pattern's scheme, so they can be passed on as sources. ``missing_ok=False``: a
    base folder (or a path without wildcards) that does not exist raises
    :class:`SourcesNotFound` naming it, instead of giving an empty list.
    """
    base_uri = glob_base(pattern)
    fs, base = open_filesystem(base_uri, setting="sources")
    if base_uri == pattern:
        info = fs.get_file_info(base)
        if info.type == pafs.FileType.File:
            return [pattern]
        if not missing_ok and info.type == pafs.FileType.NotFound:
            raise SourcesNotFound(f"sources {pattern!r}: no such file")
        return []
    full = (
        open_filesystem(pattern, setting="sources")[1]
        if "://" in pattern
        else os.path.abspath(pattern)
    )
    if fs.get_file_info(base).type != pafs.FileType.Directory:
        if missing_ok:
            return []
        raise SourcesNotFound(
            f"sources glob {pattern!r}: its folder {base_uri!r} does not exist (or is not a "
            "folder); check the path, the mount or bucket, and the credentials that list it"
        )
    infos = fs.get_file_info(pafs.FileSelector(base, recursive=True))
    prefix = pattern[: pattern.find("://") + 3] if "://" in pattern else ""
    matcher = _glob_regex(full)
    matched: list[str] = []
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        if not matcher.fullmatch(info.path):
            continue
        mtime = info.mtime
        if mtime is not None and modified_after is not None and mtime < modified_after:
            continue
        if mtime is not None and modified_before is not None and mtime >= modified_before:
            continue
        matched.append(prefix + info.path if prefix else info.path)
    return sorted(matched)


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """``*`` and ``?`` stay within one path segment; ``**/`` spans any number of them."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(pattern[i]))
                i += 1
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))
