"""TLS on both Jobs-API paths (sync and async): a CA bundle is honoured, and a server the
bundle does not trust never receives the token."""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.exceptions import RayOrchClusterError
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from tests import tls_certs

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)

TOKEN = "tls-test-token-0123456789"


def _self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    from cryptography import x509

    key = tls_certs.new_key()
    subject = tls_certs.common_name(name)
    cert = tls_certs.certificate(
        subject,
        key,
        subject,
        key,
        [
            (tls_certs.loopback_names(), False),
            (x509.BasicConstraints(ca=True, path_length=None), True),
        ],
    )
    return (
        tls_certs.write_pem(directory / f"{name}.pem", cert),
        tls_certs.write_key(directory / f"{name}.key", key),
    )


@pytest.fixture
def https_jobs_api(tmp_path) -> Iterator[tuple[str, Path, Path, list[str]]]:
    """A Jobs API over HTTPS on loopback; yields (address, its cert, an unrelated cert, seen
    Authorization headers)."""
    cert, key = _self_signed(tmp_path, "server")
    other, _ = _self_signed(tmp_path, "other")
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            if self.path == "/api/version":
                body = {"ray_version": "2.60.0"}
            else:
                body = {"status": "RUNNING", "submission_id": "j1", "message": ""}
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", cert, other, seen
    finally:
        server.shutdown()
        server.server_close()


def _hook(monkeypatch, address: str, verify: object) -> RayOrchHook:
    conn = {
        "conn_type": "rayorch",
        "host": address,
        "password": TOKEN,
        "extra": {"verify": verify, "timeout": 5},
    }
    monkeypatch.setenv("AIRFLOW_CONN_RO_TLS", json.dumps(conn))
    return RayOrchHook("ro_tls")


def test_trusted_ca_bundle_works_sync_and_async(monkeypatch, https_jobs_api) -> None:
    address, cert, _, seen = https_jobs_api
    hook = _hook(monkeypatch, address, str(cert))
    assert hook.check_reachable() == "2.60.0"
    assert hook.get_job_status("j1") == "RUNNING"
    assert asyncio.run(_hook(monkeypatch, address, str(cert)).aget_job_status("j1")) == "RUNNING"
    assert set(seen) == {f"Bearer {TOKEN}"}


def test_untrusted_server_fails_sync_and_never_gets_the_token(monkeypatch, https_jobs_api) -> None:
    address, _, other, seen = https_jobs_api
    with pytest.raises(RayOrchClusterError, match=r"(?i)certificate|TLS"):
        _hook(monkeypatch, address, str(other)).get_job_status("j1")
    assert seen == []


def test_untrusted_server_fails_async_and_never_gets_the_token(monkeypatch, https_jobs_api) -> None:
    address, _, other, seen = https_jobs_api
    with pytest.raises(RayOrchClusterError, match=r"(?i)certificate|TLS"):
        asyncio.run(_hook(monkeypatch, address, str(other)).aget_job_status("j1"))
    assert seen == []
