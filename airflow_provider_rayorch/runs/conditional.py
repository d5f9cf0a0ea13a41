"""Conditional writes on a run store's filesystem: the two primitives the repair lease needs.

A lease is exclusive only if the store itself decides, atomically, which of two
racing writers wins; a check followed by a write lets both win. So every change to
a lease is one of two conditional writes, with one implementation per filesystem kind:

- ``create_if_absent(path, data)``: write ``path`` only if nothing is there;
- ``replace_if_unchanged(path, data, token)``: replace ``path`` only if it still
  holds the version ``read(path)`` returned with ``token``.

Both return the new version's token, or ``None`` when the store refused the write.

Local disk (a local path, ``file://``): a create writes a private file and hard-links
it into place (the link fails if the path exists, and no reader ever sees a partial
file); a replace compares and renames under an exclusive ``flock`` of a sidecar
``<path>.lock``. The token is the content's SHA-256.

S3 and S3-compatible servers: ``PUT`` with ``If-None-Match: *`` or ``If-Match: <etag>``
through boto3 (the ``s3`` extra): pyarrow.fs has no conditional writes
(apache/arrow#44281). The token is the ETag. A process makes one boto3 client per
endpoint, region, addressing style and credentials (:mod:`.s3_clients`, shared with
the sources listing), and every write reuses it.
Some S3-compatible servers accept these headers and ignore them, so the first use
on a bucket checks that a second ``If-None-Match: *`` create is refused.

Any other kind (GCS, HDFS, ...) raises :class:`ConditionalWritesUnsupported` naming
the store and what to use instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import threading
import uuid
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl, urlsplit

import pyarrow.fs as pafs

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs.s3_clients import s3_client

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ConditionalWrites", "ConditionalWritesUnsupported", "conditional_writes"]


class ConditionalWritesUnsupported(StoreError):
    """A run store whose filesystem cannot write conditionally, so it cannot hold a
    lease that only one writer takes."""


class StoreLocation(Protocol):
    """Where a run store lives (``RunStore`` is one): its filesystem, URI and options."""

    @property
    def fs(self) -> pafs.FileSystem: ...

    @property
    def uri(self) -> str: ...

    @property
    def options(self) -> Mapping[str, Any]: ...


class ConditionalWrites(Protocol):
    """Atomic, conditional writes of small objects (see the module docstring)."""

    def read(self, path: str) -> tuple[bytes, str] | None:
        """The object's bytes and its version token, or None if absent."""

    def create_if_absent(self, path: str, data: bytes) -> str | None:
        """Write ``path`` if absent; the new token, or None if it exists."""

    def replace_if_unchanged(self, path: str, data: bytes, token: str) -> str | None:
        """Replace ``path`` if it still is version ``token``; the new token, or None."""


def conditional_writes(store: StoreLocation) -> ConditionalWrites:
    """The conditional writes of ``store``'s filesystem, or ConditionalWritesUnsupported."""
    if isinstance(store.fs, pafs.LocalFileSystem):
        return LocalConditionalWrites()
    if isinstance(store.fs, pafs.S3FileSystem):
        return S3ConditionalWrites(store)
    raise ConditionalWritesUnsupported(
        f"run store {store.uri!r} ({store.fs.type_name} filesystem): the repair lease "
        "needs conditional writes, which this provider implements for local disks and "
        "S3 (or S3-compatible servers with conditional PUTs) only; keep runs you repair "
        "in such a run store"
    )


# -- local disk ------------------------------------------------------------------------
def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class LocalConditionalWrites:
    """Hard-link create and flock-guarded compare-and-rename (see the module docstring)."""

    def read(self, path: str) -> tuple[bytes, str] | None:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        return data, _digest(data)

    def _private_copy(self, path: str, data: bytes) -> str:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.new-{uuid.uuid4().hex}"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return tmp

    def create_if_absent(self, path: str, data: bytes) -> str | None:
        tmp = self._private_copy(path, data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return None
        finally:
            os.unlink(tmp)
        return _digest(data)

    def replace_if_unchanged(self, path: str, data: bytes, token: str) -> str | None:
        import fcntl

        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(f"{path}.lock", "ab") as guard:
            fcntl.flock(guard, fcntl.LOCK_EX)  # released when the file closes
            current = self.read(path)
            if current is None or current[1] != token:
                return None
            os.replace(self._private_copy(path, data), path)
        return _digest(data)


# -- S3 ----------------------------------------------------------------------------------
#: (endpoint, bucket) pairs whose server was seen to refuse a second conditional create
_ENFORCED: set[tuple[str, str]] = set()
_ENFORCED_LOCK = threading.Lock()
#: S3 error codes that mean "the condition did not hold" (409: a concurrent conditional
#: write to the key is in flight, which AWS asks to retry: the caller's next try does)
_REFUSED = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}
_MISSING = {"NoSuchKey", "404", "NotFound"}


class S3ConditionalWrites:
    """Conditional PUTs through boto3 (see the module docstring)."""

    def __init__(self, store: StoreLocation) -> None:
        options = {**dict(parse_qsl(urlsplit(store.uri).query)), **store.options}
        try:
            self.client = s3_client(options)
        except ImportError:
            raise StoreError(
                f"run store {store.uri!r}: the repair lease on S3 uses conditional writes "
                "through boto3, which is not installed; install the provider's s3 extra: "
                "pip install 'airflow-provider-rayorch[s3]'"
            ) from None
        self.uri = store.uri
        self.endpoint = str(self.client.meta.endpoint_url)

    @staticmethod
    def _split(path: str) -> tuple[str, str]:
        bucket, _, key = path.lstrip("/").partition("/")
        return bucket, key

    def _code(self, exc: Exception) -> str:
        response = getattr(exc, "response", None) or {}
        error = response.get("Error") or {}
        return str(error.get("Code") or response.get("ResponseMetadata", {}).get("HTTPStatusCode"))

    def _fail(self, what: str, path: str, exc: Exception) -> StoreError:
        code = self._code(exc)
        if code in ("NotImplemented", "501"):
            return ConditionalWritesUnsupported(
                f"run store {self.uri!r}: the S3 server at {self.endpoint} does not implement "
                "conditional PUTs (If-None-Match / If-Match), so the repair lease cannot be "
                "exclusive there; use AWS S3, or an S3-compatible server that implements them"
            )
        return StoreError(f"run store {self.uri!r}: {what} s3://{path} failed: {code}: {exc}")

    def read(self, path: str) -> tuple[bytes, str] | None:
        from botocore.exceptions import ClientError

        bucket, key = self._split(path)
        try:
            answer = self.client.get_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            if self._code(exc) in _MISSING:
                return None
            raise self._fail("reading", path, exc) from None
        return bytes(answer["Body"].read()), str(answer["ETag"])

    def _put(self, path: str, data: bytes, **condition: str) -> str | None:
        from botocore.exceptions import ClientError

        bucket, key = self._split(path)
        try:
            answer = self.client.put_object(Bucket=bucket, Key=key, Body=data, **condition)
        except ClientError as exc:
            if self._code(exc) in _REFUSED | _MISSING:
                return None
            raise self._fail("writing", path, exc) from None
        return str(answer["ETag"])

    def _check_enforced(self, path: str) -> None:
        """Refuse a server that ignores ``If-None-Match`` (once per endpoint and bucket)."""
        bucket = self._split(path)[0]
        with _ENFORCED_LOCK:
            if (self.endpoint, bucket) in _ENFORCED:
                return
            probe = posixpath.join(posixpath.dirname(path), f".conditional-probe-{uuid.uuid4()}")
            try:
                first = self._put(probe, b"", IfNoneMatch="*")
                second = self._put(probe, b"", IfNoneMatch="*")
            finally:
                with contextlib.suppress(Exception):
                    self.client.delete_object(Bucket=bucket, Key=self._split(probe)[1])
            if first is None or second is not None:
                raise ConditionalWritesUnsupported(
                    f"run store {self.uri!r}: the S3 server at {self.endpoint} ignores "
                    "If-None-Match (a second create-only PUT of one key succeeded), so the "
                    "repair lease cannot be exclusive there; use AWS S3, or an S3-compatible "
                    "server that implements conditional PUTs"
                )
            _ENFORCED.add((self.endpoint, bucket))

    def create_if_absent(self, path: str, data: bytes) -> str | None:
        self._check_enforced(path)
        return self._put(path, data, IfNoneMatch="*")

    def replace_if_unchanged(self, path: str, data: bytes, token: str) -> str | None:
        self._check_enforced(path)
        return self._put(path, data, IfMatch=token)
