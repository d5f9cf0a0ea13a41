"""One boto3 S3 client per endpoint, region, addressing style, signing and
credentials in a process, shared by the sources listing (:mod:`.s3_listing`) and the
run store's conditional writes (:mod:`.conditional`).

boto3 clients are thread-safe, but making one is not and costs tens of
milliseconds. pyarrow S3 options (``endpoint_override``, ``scheme``, ``region``,
``access_key``, ``secret_key``, ``session_token``, ``force_virtual_addressing``,
``anonymous``) pick the client; what they leave unset comes from boto3's own chain.
The cache key holds a SHA-256 digest of the credentials, never a secret.
"""

from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["s3_addressing_style", "s3_client", "s3_client_kwargs"]

#: The clients made in this process, by :func:`_client_key`.
_CLIENTS: dict[tuple[str, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def s3_client_kwargs(options: Mapping[str, Any]) -> dict[str, Any]:
    """boto3 client arguments from pyarrow S3 options."""
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


def s3_client(options: Mapping[str, Any]) -> Any:
    """The process's boto3 S3 client for ``options``, made on first use; raises
    ImportError without boto3."""
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config

    style = s3_addressing_style(options)
    anonymous = _truthy(options, "anonymous")
    kwargs = s3_client_kwargs(options)
    key = _client_key(style, anonymous, kwargs)
    with _CLIENTS_LOCK:
        if key not in _CLIENTS:
            config = Config(s3={"addressing_style": style})
            if anonymous:
                config = config.merge(Config(signature_version=UNSIGNED))
            _CLIENTS[key] = boto3.client("s3", config=config, **kwargs)
        return _CLIENTS[key]


def _client_key(style: str, anonymous: bool, kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    """What tells two clients apart: endpoint, region, addressing style, signing, and
    the credentials as a SHA-256 digest."""
    secret = "\0".join(
        str(kwargs.get(name, ""))
        for name in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token")
    )
    return (
        str(kwargs.get("endpoint_url", "")),
        str(kwargs.get("region_name", "")),
        style,
        "anonymous" if anonymous else "signed",
        hashlib.sha256(secret.encode()).hexdigest(),
    )


def _truthy(options: Mapping[str, Any], name: str) -> bool:
    return str(options.get(name, "")).lower() in ("1", "true")
