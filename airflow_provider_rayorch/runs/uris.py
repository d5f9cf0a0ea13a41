"""Run-store URIs: open one through :mod:`pyarrow.fs` with options, join and split paths.

A run store is a local path or a URI (``file://``, ``s3://``, ``gs://``, ...). pyarrow
also reads filesystem options from a URI's query string
(``s3://bucket/runs?endpoint_override=...``); paths are always joined before the
query, never after it. Options belong in ``run_store_options`` (the connection's
extra), which this module turns into the filesystem's keyword arguments.

A URI never carries credentials: pyarrow would take ``s3://KEY:SECRET@bucket`` or
``?secret_key=...``, and the URI would then be logged, pushed to XCom, written into
the store's records and shown on ``ps``. Such a URI is refused with
:class:`RunStoreSettingError`, whose message never repeats the secret.
"""

from __future__ import annotations

import json
import os
import posixpath
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import pyarrow.fs as pafs

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs.paths import DRIVER_LOGS, driver_log_name
from airflow_provider_rayorch.runs.paths import driver_log as driver_log_parts
from airflow_provider_rayorch.runs.secrets import (
    RunStoreSettingError,
    check_uri,
    is_local,
    redact_uri,
)

__all__ = [
    "DRIVER_LOGS",
    "RunStoreSettingError",
    "StoreUnreachable",
    "check_uri",
    "driver_log_name",
    "driver_log_parts",
    "fs_path",
    "is_local",
    "join_uri",
    "open_filesystem",
    "redact_uri",
    "split_query",
    "store_root_of",
]

_OPTIONS = "run_store_options"
#: query values pyarrow's ``from_uri`` reads as booleans
_BOOLEAN_WORDS = {"true": True, "false": False}
#: pyarrow's URI opener (a module attribute, so a test can stand in for AWS)
_from_uri = pafs.FileSystem.from_uri
#: Remote filesystems this process opened, by URI and options, most recent last: a
#: store, a listing or a trigger opening the same place again reuses the client (its
#: connections and credential lookup). At most this many are kept.
OPENED_MAX = 64
_opened: OrderedDict[tuple[str, str], tuple[pafs.FileSystem, str]] = OrderedDict()
_opened_lock = threading.Lock()


class StoreUnreachable(StoreError, OSError):
    """A run store or sources URI cannot be opened: pyarrow could not reach its
    filesystem (for S3, often the bucket's region lookup at AWS for a bucket that
    lives on another endpoint). The message names the URI and how to give the endpoint."""


def _endpoint_fix(setting: str, scheme: str) -> str:
    if scheme != "s3":
        return "Check the URI, and that this machine can reach it with its credentials"
    if "run_store" in setting:
        return (
            "On an S3-compatible server (MinIO, Ceph, ...) give its endpoint in the "
            f"connection extra {_OPTIONS} "
            '({"endpoint_override": "host:port", "scheme": "http", "region": "..."}) and '
            "open the store with them: RayOrchHook(conn_id).run_store(uri), "
            "RayOrchHook(conn_id).read_summary_outputs(summary), or "
            f"RunStore(uri, options) with options=RayOrchHook(conn_id).{_OPTIONS} "
            "(docs/run-store.md, Reading outputs)"
        )
    return (
        "On an S3-compatible server (MinIO, Ceph, ...) give its endpoint in the URI's "
        "query string (s3://bucket/in/*.pdf?endpoint_override=host:port&scheme=http&"
        "region=...) and its keys through the credential chain "
        "(docs/airflow/event-driven.md, Sources on an S3-compatible server)"
    )


def split_query(uri: str) -> tuple[str, str]:
    """``(uri without its query string, the query string)``."""
    if is_local(uri):
        return uri, ""
    base, _, query = uri.partition("?")
    return base, query


def join_uri(uri: str, *parts: str) -> str:
    """``uri`` with ``parts`` appended to its path, before any query string."""
    if is_local(uri):
        return os.path.join(uri, *parts)
    split = urlsplit(uri)
    path = posixpath.join(split.path.rstrip("/") or "/", *parts) if parts else split.path
    if not split.path and parts:  # s3://bucket?x=1 has its bucket in netloc, no path
        path = "/" + posixpath.join(*parts)
    return urlunsplit((split.scheme, split.netloc, path, split.query, split.fragment))


def fs_path(uri: str) -> str:
    """The path inside its filesystem that ``uri`` names (what ``from_uri`` returns),
    found without opening anything: ``s3://b/k?region=x`` is ``b/k``. Read a file a
    manifest names with the store's own filesystem, which carries its options."""
    if is_local(uri):
        return os.path.abspath(os.path.expanduser(uri))
    split = urlsplit(uri)
    if split.scheme.lower() in ("s3", "gs", "gcs"):
        return posixpath.join(split.netloc, split.path.lstrip("/")).rstrip("/")
    return split.path


def store_root_of(outputs_uri: str, run_id: str) -> str | None:
    """The run store URI an outputs URI (``<store>/<run_id>/outputs...``) lies in, its
    query string kept; None when ``outputs_uri`` is not inside a run of ``run_id``."""
    base, query = split_query(outputs_uri)
    marker = f"/{run_id}/outputs"
    if marker not in base:
        return None
    root = base[: base.rindex(marker)]
    return f"{root}?{query}" if query else root


def _query_options(query: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        options[key] = _BOOLEAN_WORDS.get(value.lower(), value)
    return options


def _build(cls: type[pafs.FileSystem], kwargs: dict[str, Any], uri: str) -> pafs.FileSystem:
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise RunStoreSettingError(
            f"run store {redact_uri(uri)}: {cls.__name__} refuses its options "
            f"({sorted(kwargs)}): {exc}. Check the names in the connection extra {_OPTIONS} "
            "against pyarrow.fs." + cls.__name__
        ) from None


def open_filesystem(
    uri: str, options: Mapping[str, Any] | None = None, *, setting: str = "run_store"
) -> tuple[pafs.FileSystem, str]:
    """The filesystem and the root path inside it that ``uri`` names.

    ``options`` are the filesystem's keyword arguments (``endpoint_override``,
    ``region``, ``access_key``, ...); they win over the same options in the URI's
    query string. With options, S3 and GCS filesystems are built directly (pyarrow's
    ``from_uri`` would first ask AWS for the bucket's region, whatever the endpoint).
    Options do not apply to local paths. ``setting`` names the URI's origin in errors.
    """
    check_uri(uri, setting)
    if options is not None and not isinstance(options, Mapping):
        raise RunStoreSettingError(
            f"{_OPTIONS} must be a JSON object, got {type(options).__name__}"
        )
    if is_local(uri):
        return pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(uri))
    key = (uri, json.dumps(dict(options or {}), sort_keys=True, default=repr))
    with _opened_lock:
        if key in _opened:
            _opened.move_to_end(key)
            return _opened[key]
    opened = _open_remote(uri, options, setting)
    with _opened_lock:
        _opened[key] = opened
        while len(_opened) > OPENED_MAX:
            _opened.popitem(last=False)
    return opened


def _open_remote(
    uri: str, options: Mapping[str, Any] | None, setting: str
) -> tuple[pafs.FileSystem, str]:
    """A new filesystem for a remote ``uri`` (see :func:`open_filesystem`)."""
    split = urlsplit(uri)
    scheme = split.scheme.lower()
    if options and scheme in ("s3", "gs", "gcs"):
        kwargs = {**_query_options(split.query), **dict(options)}
        cls = pafs.S3FileSystem if scheme == "s3" else pafs.GcsFileSystem
        path = posixpath.join(split.netloc, split.path.lstrip("/")).rstrip("/")
        return _build(cls, kwargs, uri), path or "/"
    try:
        fs, path = _from_uri(uri)
    except OSError as exc:
        where = "the run store" if setting == "run_store" else setting
        raise StoreUnreachable(
            f"cannot open {where} {redact_uri(uri)}: {exc}. {_endpoint_fix(setting, scheme)}"
        ) from None
    return fs, path.rstrip("/") or "/"
