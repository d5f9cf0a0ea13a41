"""The syntax of a sources glob, without opening anything (no pyarrow: the
triggerer checks a glob on its event loop).

``*`` and ``?`` match within one path segment, ``**/`` any number of segments,
``[abc]`` / ``[!abc]`` one character of a set. A remote URI may end in a query string
of filesystem options (``s3://bucket/in/*.pdf?endpoint_override=host:port&region=x``):
there a ``?`` followed by ``name=`` starts the query, which is no part of the pattern;
any other ``?`` is a wildcard. Local paths and ``file://`` URIs have no query.
"""

from __future__ import annotations

import re

__all__ = ["GLOB_CHARS", "glob_regex", "has_wildcard", "split_glob_query", "wildcard_base"]

GLOB_CHARS = "*?["
#: a ``?`` that starts a query string: followed by an option name and ``=``
_QUERY_START = re.compile(r"\?(?=[A-Za-z_][A-Za-z0-9_]*=)")


def split_glob_query(pattern: str) -> tuple[str, str]:
    """``(the pattern, its query string)``; the query is '' for local paths."""
    scheme, sep, _ = pattern.partition("://")
    if not sep or scheme.lower() == "file":
        return pattern, ""
    found = _QUERY_START.search(pattern)
    if found is None:
        return pattern, ""
    return pattern[: found.start()], pattern[found.end() :]


def has_wildcard(pattern: str) -> bool:
    """``pattern`` (its query string aside) holds a wildcard."""
    path, _ = split_glob_query(pattern)
    return any(c in path for c in GLOB_CHARS)


def wildcard_base(path: str) -> str:
    """The folder of ``path`` (a pattern without query) before its first wildcard,
    ending in ``/``; ``path`` itself when it has none."""
    cut = min((path.find(c) for c in GLOB_CHARS if c in path), default=-1)
    if cut < 0:
        return path
    return path[: path.rfind("/", 0, cut) + 1] or "."


def glob_regex(pattern: str) -> re.Pattern[str]:
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
