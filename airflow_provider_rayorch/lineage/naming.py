"""Dataset names for lineage: a run's input locations and outputs folder.

OpenLineage names a dataset by ``(namespace, name)`` (its naming conventions for
files: a local path is ``("file", "/abs/path")``, ``s3://bucket/key`` is
``("s3://bucket", "key")``, ``gs://bucket/key`` is ``("gs://bucket", "key")``).
Airflow names an Asset by a URI, and the OpenLineage provider turns a ``file://``,
``s3://`` or ``gs://`` Asset URI back into exactly these pairs, so one function
here names both: the lineage backend and Airflow's asset graph agree.

Inputs are grouped by *location*, never listed one per file (a run of ten thousand
PDFs is one dataset, apache/airflow#63371): per source column and namespace, the
common folder of its files. A source that is not a path or URI (a number, inline
text) is inline data and names no dataset; the run facet still counts it.

Nothing here imports Airflow or OpenLineage. A name never carries a URI's user
information or query string (where credentials and endpoint options would sit).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = [
    "DatasetName",
    "InputLocation",
    "dataset_name",
    "input_locations",
    "is_location",
]

#: Schemes whose URIs name files or objects (others, like ``http``, are left out).
_FILE_SCHEMES = frozenset({"file", "s3", "s3a", "gs", "gcs", "hdfs", "abfs", "abfss", "wasbs"})
#: Schemes OpenLineage spells differently (``gcs://b`` is ``gs://b``; ``s3a`` is ``s3``).
_SCHEME_ALIASES = {"gcs": "gs", "s3a": "s3"}


@dataclass(frozen=True, order=True)
class DatasetName:
    """An OpenLineage dataset's ``(namespace, name)``, and the Airflow Asset URI of it."""

    namespace: str
    name: str

    @property
    def uri(self) -> str:
        """The Asset URI the OpenLineage provider translates back to this name."""
        if self.namespace == "file":
            return f"file://{self.name}"
        return f"{self.namespace}/{self.name.lstrip('/')}"


@dataclass(frozen=True)
class InputLocation:
    """One input dataset: a folder (or bucket prefix) and how many sources it holds."""

    dataset: DatasetName
    sources: int


def is_location(value: Any) -> bool:
    """``value`` names a file: an absolute local path or a file or object-store URI."""
    if not isinstance(value, str) or not value or "\n" in value:
        return False
    if "://" in value:
        return urlsplit(value).scheme.lower() in _FILE_SCHEMES
    return value.startswith("/")


def dataset_name(uri: str) -> DatasetName:
    """The ``(namespace, name)`` of a file, folder or object-store URI (or local path).

    User information and the query string are dropped: the name of a place, never
    how to reach it."""
    if "://" not in uri:
        return DatasetName("file", _clean_path(uri))
    split = urlsplit(uri)
    scheme = _SCHEME_ALIASES.get(split.scheme.lower(), split.scheme.lower())
    host = split.netloc.rpartition("@")[2]
    if scheme == "file":
        if host in ("", "localhost"):
            return DatasetName("file", _clean_path(split.path))
        return DatasetName(f"file://{host}", _clean_path(split.path))
    key = posixpath.normpath(split.path).lstrip("/") if split.path.strip("/") else ""
    return DatasetName(f"{scheme}://{host}", key or "/")


def _clean_path(path: str) -> str:
    text = posixpath.normpath(path or "/")
    return "/" + text.lstrip("/")


def _folder(name: DatasetName) -> str:
    """The folder holding the file ``name`` names."""
    parent = posixpath.dirname(name.name.rstrip("/"))
    if name.namespace == "file" or name.name.startswith("/"):
        return parent or "/"
    return parent


def _common_folder(folders: Sequence[str]) -> str:
    absolute = folders[0].startswith("/")
    parts = [f.strip("/").split("/") if f.strip("/") else [] for f in folders]
    common: list[str] = []
    for level in zip(*parts, strict=False):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    joined = "/".join(common)
    if absolute:
        return "/" + joined
    return joined or "/"


def _columns(sources: Sequence[Any], n_columns: int) -> list[list[Any]]:
    if n_columns <= 1:
        return [list(sources)]
    return [[row[i] for row in sources if isinstance(row, list | tuple)] for i in range(n_columns)]


def input_locations(
    sources: Sequence[Any],
    n_columns: int = 1,
    *,
    within: Iterable[Any] | None = None,
) -> list[InputLocation]:
    """One :class:`InputLocation` per source column and namespace: the common folder
    of its files, with the number of sources in it.

    ``within``: count only these rows (a microbatch's), while the locations stay
    those of all ``sources``, so every task of a run names the same datasets."""
    groups: dict[tuple[int, str], list[str]] = {}
    for column, values in enumerate(_columns(sources, n_columns)):
        for value in values:
            if is_location(value):
                name = dataset_name(value)
                groups.setdefault((column, name.namespace), []).append(_folder(name))
    counted = _columns(list(within), n_columns) if within is not None else None
    found: dict[DatasetName, int] = {}
    for (column, namespace), folders in sorted(groups.items()):
        location = DatasetName(namespace, _common_folder(folders))
        if counted is None:
            n = len(folders)
        else:
            n = sum(
                1 for v in counted[column] if is_location(v) and _inside(dataset_name(v), location)
            )
        found[location] = found.get(location, 0) + n
    return [InputLocation(dataset=d, sources=n) for d, n in sorted(found.items())]


def _inside(name: DatasetName, folder: DatasetName) -> bool:
    if name.namespace != folder.namespace:
        return False
    if folder.name in ("/", ""):
        return True
    return name.name.startswith(folder.name.rstrip("/") + "/")
