"""What the new-sources trigger and the DAG keep in the asset state store.

Two keys, each with one writer, so no write can undo another's:

* ``EMITTED_KEY`` (the watermark), written by the trigger only: ``{uri: size}`` of
  files whose event Airflow has stored.
* ``COMMITTED_KEY``, written by the run's last task only: ``{uri: run_id}`` of files a
  run has committed.

``NewSourcesBatch`` is the typed form of one trigger event's payload. Light on
purpose (no pyarrow): the triggerer imports it on its event loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.runs.glob_syntax import has_wildcard, split_glob_query

__all__ = [
    "COMMITTED_KEY",
    "EMITTED_KEY",
    "ListedFile",
    "NewSourcesBatch",
    "complete_on_sight",
    "decode_committed",
    "decode_emitted",
    "has_glob_pattern",
]

EMITTED_KEY = "rayorch_emitted_files"
COMMITTED_KEY = "rayorch_committed_files"


def has_glob_pattern(uri_glob: str) -> bool:
    """``uri_glob`` holds a wildcard (its query string of filesystem options aside)."""
    return has_wildcard(uri_glob)


#: Schemes of object stores that show an object only once its upload completed.
_COMPLETE_ON_UPLOAD = frozenset({"s3", "gs", "gcs", "abfs", "abfss", "az"})


def complete_on_sight(uri_glob: str) -> bool:
    """``uri_glob`` lists an object store whose listed objects are complete uploads."""
    path, _ = split_glob_query(uri_glob)
    return "://" in path and urlsplit(path).scheme.lower() in _COMPLETE_ON_UPLOAD


@dataclass(frozen=True, slots=True)
class ListedFile:
    """One matching file: its URI (as a source), its size in bytes, and its modification
    time in seconds since the epoch where the listing gives one (no part of equality:
    a file is its URI and size)."""

    uri: str
    size: int
    mtime: float | None = field(default=None, compare=False)


def _fix(key: str, asset_name: str) -> str:
    return (
        f"delete the key {key!r} of asset {asset_name!r} (REST API: DELETE "
        f"/api/v2/assets/<asset id>/state-store/{key}) to start over; the trigger then "
        "announces every matching file again"
    )


def decode_emitted(value: Any, asset_name: str) -> dict[str, int]:
    """The watermark as stored (None when the trigger never wrote it)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
        for k, v in value.items()
    ):
        raise UsageError(
            f"the asset state store value {EMITTED_KEY!r} of asset {asset_name!r} is not a "
            f"mapping of file URI to size (got {type(value).__name__}); "
            + _fix(EMITTED_KEY, asset_name)
        )
    return dict(value)


def decode_committed(value: Any, asset_name: str) -> dict[str, str]:
    """The committed record as stored (None before the first run recorded anything)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise UsageError(
            f"the asset state store value {COMMITTED_KEY!r} of asset {asset_name!r} is not a "
            f"mapping of file URI to run id (got {type(value).__name__}); "
            + _fix(COMMITTED_KEY, asset_name)
        )
    return dict(value)


@dataclass(frozen=True, slots=True)
class NewSourcesBatch:
    """Files one trigger event announces (empty for a poll that found nothing new)."""

    asset_name: str
    uri_glob: str
    files: tuple[ListedFile, ...] = ()

    def to_payload(self) -> dict[str, Any]:
        return {
            "asset_name": self.asset_name,
            "uri_glob": self.uri_glob,
            "files": [{"uri": f.uri, "size": f.size} for f in self.files],
        }

    @classmethod
    def files_of_payload(cls, payload: Any) -> list[ListedFile]:
        """The files of an event payload; raises ``UsageError`` saying what is malformed."""
        if not isinstance(payload, Mapping):
            raise UsageError(f"the payload must be a mapping, got {type(payload).__name__}")
        files = payload.get("files")
        if not isinstance(files, Sequence) or isinstance(files, str):
            raise UsageError(f"'files' must be a list of {{'uri', 'size'}}, got {files!r}")
        out = []
        for i, item in enumerate(files):
            uri = item.get("uri") if isinstance(item, Mapping) else None
            if not isinstance(uri, str) or not uri:
                raise UsageError(f"files[{i}] must be {{'uri': str, 'size': int}}, got {item!r}")
            out.append(ListedFile(uri, int(item.get("size") or 0)))
        return out
