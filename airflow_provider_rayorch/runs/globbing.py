"""Glob URIs through :mod:`pyarrow.fs`: ``s3://bucket/in/*.pdf``, ``/data/**/x?.mp4``."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import pyarrow.fs as pafs

from airflow_provider_rayorch.runs.uris import open_filesystem

if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["glob_uris"]

_GLOB_CHARS = "*?["


def glob_uris(
    pattern: str,
    *,
    modified_after: datetime | None = None,
    modified_before: datetime | None = None,
) -> list[str]:
    """Files matching a glob (``s3://bucket/in/*.pdf``, ``/data/**/x?.mp4``), sorted.

    ``modified_after`` (inclusive) and ``modified_before`` (exclusive) filter on the
    file's modification time, for example an Airflow data interval. Results keep the
    pattern's scheme, so they can be passed on as sources.
    """
    cut = min((pattern.find(c) for c in _GLOB_CHARS if c in pattern), default=-1)
    if cut < 0:
        base_uri = pattern
        fs, base = open_filesystem(base_uri)
        info = fs.get_file_info(base)
        return [pattern] if info.type == pafs.FileType.File else []
    base_uri = pattern[: pattern.rfind("/", 0, cut) + 1] or "."
    fs, base = open_filesystem(base_uri)
    _, full = open_filesystem(pattern) if "://" in pattern else (fs, os.path.abspath(pattern))
    if fs.get_file_info(base).type != pafs.FileType.Directory:
        return []
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
