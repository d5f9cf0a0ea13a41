"""PDF opening and page rendering on top of pypdfium2 (the ``documents`` extra)."""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.rayorch.errors import RayOrchError
from airflow_provider_rayorch.workloads._deps import require

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PdfError", "PdfSource", "PdfSourceCache", "describe_source", "open_pdf", "render_page"]

PdfSource = str | os.PathLike[str] | bytes | bytearray | memoryview
"""A source row of the document pipeline: a path or the PDF's bytes."""

# PDFium is not thread-safe; the local executor may run several actors in one process.
_PDFIUM_LOCK = threading.RLock()

_ERROR_CAUSES = {
    2: "cannot read the file",
    3: "corrupt or not a PDF",
    4: "encrypted PDF: a password is required",
    5: "encrypted PDF: unsupported security scheme",
    6: "page not found or broken page content",
}


class PdfError(RayOrchError):
    """A PDF (or one of its pages) cannot be used; ``str()`` is the cause."""


def _pdfium() -> Any:
    return require("pypdfium2", extra="documents")


def describe_source(source: object) -> str:
    """A short, log-friendly name for a source row."""
    if isinstance(source, bytes | bytearray | memoryview):
        return f"<{len(bytes(source))} bytes>"
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    return f"<{type(source).__name__}>"


def open_pdf(source: object) -> Any:
    """Open ``source`` as a ``pypdfium2.PdfDocument`` or raise :class:`PdfError`."""
    pdfium = _pdfium()
    data: Any
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        if not data:
            raise PdfError("empty PDF: 0 bytes")
    elif isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        if not os.path.isfile(path):
            raise PdfError(f"cannot open PDF: no such file {path!r}")
        if os.path.getsize(path) == 0:
            raise PdfError(f"empty PDF: {path!r} has 0 bytes")
        data = path
    else:
        raise PdfError(f"unsupported PDF source of type {type(source).__name__}")
    with _PDFIUM_LOCK:
        try:
            doc = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            code = int(getattr(exc, "err_code", 0) or 0)
            cause = _ERROR_CAUSES.get(code, f"cannot open PDF: {exc}")
            if isinstance(data, str):  # a path: name the file (its base name) and PDFium's words
                cause = f"{os.path.basename(data)}: {cause} ({str(exc).rstrip('.')})"
            raise PdfError(cause) from exc
        if len(doc) == 0:
            doc.close()
            raise PdfError("empty PDF: it has no pages")
    return doc


def render_page(doc: Any, index: int, *, dpi: float) -> np.ndarray:
    """Render page ``index`` as a 2-D grayscale ``uint8`` array (white is 255)."""
    with _PDFIUM_LOCK:
        try:
            page = doc[index]
            try:
                bitmap = page.render(scale=dpi / 72.0, grayscale=True)
                image = bitmap.to_numpy().copy()
            finally:
                page.close()
        except Exception as exc:
            raise PdfError(f"cannot render page {index + 1}: {exc}") from exc
    if image.ndim == 3:  # some PDFium builds hand back a channel axis for gray bitmaps
        image = image[..., 0]
    return image


class PdfSourceCache:
    """Keeps the last few opened documents so that per-page renders reuse them."""

    def __init__(self, size: int = 2) -> None:
        self._size = max(1, size)
        self._docs: OrderedDict[str, Any] = OrderedDict()

    @staticmethod
    def _key(source: object) -> str:
        if isinstance(source, bytes | bytearray | memoryview):
            return "bytes:" + hashlib.blake2b(bytes(source), digest_size=16).hexdigest()
        if isinstance(source, str | os.PathLike):
            path = os.fspath(source)
            try:
                stat = os.stat(path)
            except OSError:
                return "path:" + path
            return f"path:{path}:{stat.st_mtime_ns}:{stat.st_size}"
        return f"other:{id(source)}"

    def get(self, source: object) -> Any:
        """The open document for ``source`` (raises :class:`PdfError`)."""
        key = self._key(source)
        doc = self._docs.get(key)
        if doc is not None:
            self._docs.move_to_end(key)
            return doc
        doc = open_pdf(source)
        self._docs[key] = doc
        while len(self._docs) > self._size:
            _, old = self._docs.popitem(last=False)
            with _PDFIUM_LOCK:
                old.close()
        return doc

    def close(self) -> None:
        """Close every cached document."""
        with _PDFIUM_LOCK:
            for doc in self._docs.values():
                doc.close()
        self._docs.clear()
