"""A loopback S3-compatible server (moto, ``tests/e2e/s3_server.py``) for unit tests.

The fixture ``moto_s3`` starts one server child per test module, with the bucket ``BUCKET``,
and stops it (its own child, by process id) after the module's tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.e2e.s3_server import S3Server, s3_server_with_bucket

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["BUCKET", "S3Server", "credential_chain", "endpoint_query", "moto_s3_fixture"]

BUCKET = "rayorch"


@pytest.fixture(scope="module", name="moto_s3")
def moto_s3_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    with s3_server_with_bucket(tmp_path_factory.mktemp("moto") / "server.log", BUCKET) as server:
        yield server


def credential_chain(monkeypatch: pytest.MonkeyPatch, server: S3Server) -> None:
    """The server's keys where the AWS credential chain finds them (the environment)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", server.secret_key)
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)


def endpoint_query(server: S3Server) -> str:
    """The server's non-secret options as a URI query string."""
    return f"endpoint_override={server.endpoint}&scheme=http&region=us-east-1"
