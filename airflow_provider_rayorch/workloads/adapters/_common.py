"""Shared pieces of the adapters: model directory checks, temp files, page assembly."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections import OrderedDict

from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.workloads._deps import MissingModelError
from airflow_provider_rayorch.workloads.document_stages import AssembleDocument

__all__ = ["AssembleMarkdown", "SourceFiles", "require_model_dir"]


def require_model_dir(path: str | os.PathLike[str], *, what: str, how: str) -> str:
    """``path`` as a string if it is a non-empty directory, else :class:`MissingModelError`."""
    name = os.fspath(path)
    if not os.path.isdir(name) or not any(os.scandir(name)):
        raise MissingModelError(
            f"{what}: model directory {name!r} is missing or empty. Nothing is downloaded at "
            f"run time; {how}"
        )
    return name


class SourceFiles:
    """Gives a filesystem path for a PDF source; bytes are spilled to temp files.

    The ``keep`` most recently used spills are kept, so that the pages of one
    document reuse one file.
    """

    def __init__(self, keep: int = 4) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="rayorch-src-")
        self._paths: OrderedDict[str, str] = OrderedDict()
        self._keep = max(1, keep)

    def path(self, source: object) -> str:
        if isinstance(source, str | os.PathLike):
            return os.fspath(source)
        if not isinstance(source, bytes | bytearray | memoryview):
            raise UsageError(
                f"unsupported PDF source of type {type(source).__name__}: a source row is a "
                "path or the PDF's bytes"
            )
        data = bytes(source)
        key = hashlib.blake2b(data, digest_size=16).hexdigest()
        if key in self._paths:
            self._paths.move_to_end(key)
            return self._paths[key]
        path = os.path.join(self._dir.name, f"{key}.pdf")
        with open(path, "wb") as fh:
            fh.write(data)
        self._paths[key] = path
        while len(self._paths) > self._keep:
            _, old = self._paths.popitem(last=False)
            os.unlink(old)
        return path


class AssembleMarkdown(AssembleDocument):
    """``doc``: join per-page ``{"page", "markdown"}`` results like ``AssembleDocument``."""

    text_key = "markdown"
