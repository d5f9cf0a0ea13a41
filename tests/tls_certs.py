"""Test certificates for 127.0.0.1: EC keys, certificates valid from five minutes ago
for a day, written as PEM files. ``cryptography`` is imported on first use."""

from __future__ import annotations

import datetime
import ipaddress
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path


def new_key() -> Any:
    """A fresh P-256 private key."""
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def common_name(name: str) -> Any:
    """An X.509 name holding only the common name ``name``."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])


def loopback_names() -> Any:
    """The subject alternative names extension naming 127.0.0.1."""
    from cryptography import x509

    return x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])


def certificate(
    subject: Any, key: Any, issuer: Any, issuer_key: Any, extensions: list[tuple[Any, bool]]
) -> Any:
    """A certificate for ``subject`` holding ``key``'s public key, signed by ``issuer_key``
    as ``issuer``, with ``extensions`` (each with whether it is critical)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical=critical)
    return builder.sign(issuer_key, hashes.SHA256())


def write_pem(path: Path, cert: Any) -> Path:
    """Write ``cert`` to ``path`` as PEM; returns ``path``."""
    from cryptography.hazmat.primitives import serialization

    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def write_key(path: Path, key: Any) -> Path:
    """Write ``key`` to ``path`` as unencrypted PKCS#8 PEM; returns ``path``."""
    from cryptography.hazmat.primitives import serialization

    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path
