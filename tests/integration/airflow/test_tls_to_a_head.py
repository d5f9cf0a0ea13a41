"""TLS to a real Ray head: a loopback head behind a TLS-terminating proxy whose
certificate a private CA signs (as a cluster behind an ingress with an internal CA).

With the connection's extra ``verify`` naming the CA bundle, RayOrchHook submits a job
through the proxy and reads its status and logs; with the default trust store the
first request fails before anything reaches the head, naming the fix.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import ssl
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.exceptions import RayOrchClusterError
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.operators.local_head import start_local_head, stop_local_head
from tests import tls_certs

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.timeout(300)

CONN = "rayorch_tls"


def _private_ca(directory: Path) -> tuple[Path, Path, Path]:
    """A CA certificate, and a server certificate for 127.0.0.1 it signs, with its key."""
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID

    ca_key, key = tls_certs.new_key(), tls_certs.new_key()
    ca_name = tls_certs.common_name("rayorch test CA")
    usage = x509.KeyUsage(False, False, False, False, False, True, True, False, False)
    ca = tls_certs.certificate(
        ca_name,
        ca_key,
        ca_name,
        ca_key,
        [
            (x509.BasicConstraints(ca=True, path_length=0), True),
            (usage, True),
            (x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False),
        ],
    )
    server = tls_certs.certificate(
        tls_certs.common_name("127.0.0.1"),
        key,
        ca_name,
        ca_key,
        [
            (tls_certs.loopback_names(), False),
            (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False),
            (x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False),
        ],
    )
    return (
        tls_certs.write_pem(directory / "ca.pem", ca),
        tls_certs.write_pem(directory / "server.pem", server),
        tls_certs.write_key(directory / "server.key", key),
    )


class TlsProxy:
    """Terminates TLS on a loopback port and relays each connection to ``upstream``
    (``host:port``), on an event loop of its own thread."""

    def __init__(self, upstream: str, cert: Path, key: Path) -> None:
        self.upstream_host, port = upstream.rsplit(":", 1)
        self.upstream_port = int(port)
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(cert, key)
        #: connections relayed to the upstream (made only after a handshake succeeded)
        self.relayed = 0
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait()

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._relay, "127.0.0.1", 0, ssl=self.context)
        )
        self.port = int(self.server.sockets[0].getsockname()[1])
        ready.set()
        self.loop.run_forever()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.relayed += 1
        up_reader, up_writer = await asyncio.open_connection(self.upstream_host, self.upstream_port)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, ssl.SSLError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def stop(self) -> None:
        async def close() -> None:
            self.server.close()
            await self.server.wait_closed()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)


@pytest.fixture(scope="module")
def head_behind_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """(the proxy, its CA bundle, the head's token), the head stopped afterwards."""
    tmp_path = tmp_path_factory.mktemp("tls")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAYORCH_LOCAL_HEADS_DIR", str(tmp_path / "heads"))
        for var in ("RAY_ADDRESS", "SSL_CERT_FILE", "SSL_CERT_DIR"):
            mp.delenv(var, raising=False)
        ca, cert, key = _private_ca(tmp_path)
        head = start_local_head(num_cpus=1, timeout=180)
        try:
            proxy = TlsProxy(head["address"].split("://", 1)[1], cert, key)
            try:
                yield proxy, ca, Path(head["token_path"]).read_text().strip()
            finally:
                proxy.stop()
        finally:
            stop_local_head(head)


def _hook(monkeypatch: pytest.MonkeyPatch, port: int, token: str, **extra: str) -> RayOrchHook:
    conn = {"conn_type": "rayorch", "host": f"https://127.0.0.1:{port}", "password": token}
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN.upper()}", json.dumps({**conn, "extra": extra}))
    return RayOrchHook(CONN)


def test_a_job_is_submitted_through_tls_with_the_ca_bundle_of_the_connection(
    head_behind_tls: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy, ca, token = head_behind_tls
    hook = _hook(monkeypatch, proxy.port, token, verify=str(ca))
    job_id = hook.submit_job(
        f"{sys.executable} -c \"print('through', 'tls')\"",
        submission_id=f"tls-{secrets.token_hex(4)}",
    )
    while (status := str(hook.get_job_status(job_id))) in ("PENDING", "RUNNING"):
        time.sleep(0.5)  # the test's timeout bounds the wait
    assert status == "SUCCEEDED", hook.get_job_logs(job_id)[-2000:]
    assert "through tls" in hook.get_job_logs(job_id)
    assert proxy.relayed >= 1


def test_the_default_trust_store_refuses_the_head_and_names_the_fix(
    head_behind_tls: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy, _ca, token = head_behind_tls
    hook = _hook(monkeypatch, proxy.port, token)
    relayed = proxy.relayed
    with pytest.raises(RayOrchClusterError) as err:
        hook.submit_job("echo never", submission_id=f"tls-{secrets.token_hex(4)}")
    message = str(err.value)
    assert (
        f"TLS verification of the Ray Jobs API at https://127.0.0.1:{proxy.port} failed" in message
    )
    assert "certificate verify failed" in message
    assert "signed by the default CA bundle" in message
    assert f"set the {CONN!r} connection's extra `verify` to the CA bundle that signs it" in message
    assert token not in message
    assert proxy.relayed == relayed  # no request (and no token) went past the handshake
