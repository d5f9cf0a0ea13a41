"""A glob's files on S3 (and S3-compatible servers), listed a page at a time.

pyarrow.fs lists a folder in one call, holding every entry of it; a flat prefix of
millions of objects would be held whole. Through boto3 (the ``s3`` extra), a glob's
base prefix is listed with ``ListObjectsV2`` pages of at most 1,000 keys, which come
in key order: the order a full sort of the URIs gives. The glob's query options
(``endpoint_override``, ``scheme``, ``region``) pick the endpoint; the keys come from
the credential chain. Without boto3, :func:`s3_pages` returns None and the caller
lists through pyarrow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from airflow_provider_rayorch.runs.uris import StoreUnreachable

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["s3_addressing_style", "s3_client_kwargs", "s3_pages"]


def s3_client_kwargs(options: Mapping[str, Any]) -> dict[str, Any]:
    """boto3 client arguments from pyarrow S3 options; what is not set comes from
    boto3's own chain."""
    kwargs: dict[str, Any] = {}
    if options.get("endpoint_override"):
        endpoint = str(options["endpoint_override"])
        if "://" not in endpoint:
            endpoint = f"{options.get('scheme') or 'https'}://{endpoint}"
        kwargs["endpoint_url"] = endpoint
    names = {
        "region": "region_name",
        "access_key": "aws_access_key_id",
        "secret_key": "aws_secret_access_key",
        "session_token": "aws_session_token",
    }
    for option, name in names.items():
        if options.get(option):
            kwargs[name] = str(options[option])
    return kwargs


def s3_addressing_style(options: Mapping[str, Any]) -> str:
    """boto3's S3 addressing style for pyarrow S3 options: ``virtual`` where
    ``force_virtual_addressing`` is set, else ``path``."""
    return "virtual" if _truthy(options, "force_virtual_addressing") else "path"


def _truthy(options: Mapping[str, Any], name: str) -> bool:
    return str(options.get(name, "")).lower() in ("1", "true")


def s3_pages(folder: str, options: Mapping[str, Any]) -> Iterator[pafs.FileInfo] | None:
    """The files under ``folder`` (``bucket/prefix``) in key order, a page at a time;
    None without boto3."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        return None
    from botocore import UNSIGNED

    config = Config(s3={"addressing_style": s3_addressing_style(options)})
    if _truthy(options, "anonymous"):
        config = config.merge(Config(signature_version=UNSIGNED))
    client = boto3.client("s3", config=config, **s3_client_kwargs(options))
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
