"""A glob's files on S3 (and S3-compatible servers), listed a page at a time.

pyarrow.fs lists a folder in one call, holding every entry of it; a flat prefix of
millions of objects would be held whole. Through boto3 (the ``s3`` extra), a glob's
base prefix is listed with ``ListObjectsV2`` pages of at most 1,000 keys, which come
in key order: the order a full sort of the URIs gives. The glob's query options
(``endpoint_override``, ``scheme``, ``region``) pick the endpoint; the keys come from
the credential chain; the client is the process's one for those options
(:mod:`.s3_clients`). Without boto3, :func:`s3_pages` returns None and the caller
lists through pyarrow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from airflow_provider_rayorch.runs.s3_clients import s3_client
from airflow_provider_rayorch.runs.uris import StoreUnreachable

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["s3_pages"]


def s3_pages(folder: str, options: Mapping[str, Any]) -> Iterator[pafs.FileInfo] | None:
    """The files under ``folder`` (``bucket/prefix``) in key order, a page at a time;
    None without boto3."""
    try:
        client = s3_client(options)
    except ImportError:
        return None
    return _pages(client, folder)


def _pages(client: Any, folder: str) -> Iterator[pafs.FileInfo]:
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, _, prefix = folder.strip("/").partition("/")
    prefix = f"{prefix}/" if prefix else ""
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    try:
        yield from _files(bucket, pages)
    except (BotoCoreError, ClientError) as exc:
        raise StoreUnreachable(f"listing s3://{bucket}/{prefix}: {exc}") from None


def _files(bucket: str, pages: Any) -> Iterator[pafs.FileInfo]:
    for page in pages:
        for item in page.get("Contents") or ():
            key = str(item["Key"])
            if key.endswith("/"):  # a folder marker
                continue
            yield pafs.FileInfo(
                f"{bucket}/{key}",
                pafs.FileType.File,
                mtime=item.get("LastModified"),
                size=item.get("Size"),
            )
