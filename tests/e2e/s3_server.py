"""A loopback S3 API for tests: moto's server in a child process on 127.0.0.1.

``start_s3_server()`` runs this file as a script: the child binds a free port on
127.0.0.1 (port 0, so no other process can take the port between a probe and the
bind), prints it, and serves moto's S3 until the parent stops it by its process id.

Moto checks a conditional PUT (``If-None-Match``, ``If-Match``) and then stores the
object in two steps, and its server answers requests on several threads: two
racing conditional PUTs could both pass the check, which real S3 never allows (it
decides one write per key at a time). The child therefore hands one request at a
time to moto (a lock around the WSGI call), so the server keeps S3's atomicity and
a race test measures the lease, not moto.

Credentials are random per server, handed to the tests in memory, never printed;
the server's request log (paths and status codes only) goes to a file.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from pathlib import Path

REGION = "us-east-1"
#: The bucket the session's server starts with.
BUCKET = "rayorch-e2e"
_START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class S3Server:
    """A running loopback S3 server and the credentials it was started with."""

    port: int
    access_key: str
    secret_key: str
    process: subprocess.Popen[bytes]

    @property
    def endpoint(self) -> str:
        """``host:port``, as pyarrow's ``endpoint_override`` takes it."""
        return f"127.0.0.1:{self.port}"

    def options(self) -> dict[str, str]:
        """``run_store_options`` (pyarrow S3 filesystem options) for this server."""
        return {
            "endpoint_override": self.endpoint,
            "scheme": "http",
            "region": REGION,
            "access_key": self.access_key,
            "secret_key": self.secret_key,
        }

    def client(self) -> Any:
        """A boto3 S3 client of this server."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=f"http://{self.endpoint}",
            region_name=REGION,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
        )

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def stop(self) -> None:
        """Stop the server (this process's own child, by its id) and wait for it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_s3_server(log_path: Path, *, ignore_conditions: bool = False) -> S3Server:
    """Start the server; its request log goes to ``log_path``. ``ignore_conditions``
    makes it drop ``If-None-Match`` and ``If-Match``, as some S3-compatible servers do."""
    flags = ["--ignore-conditions"] if ignore_conditions else []
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), *flags],
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
        )
    assert process.stdout is not None
    line = _first_line(process, _START_TIMEOUT_S)
    if not line.startswith("PORT "):
        process.kill()
        process.wait(timeout=10)
        raise RuntimeError(f"the S3 server did not start ({line!r}); see {log_path}")
    return S3Server(
        port=int(line.split()[1]),
        access_key=secrets.token_hex(10),
        secret_key=secrets.token_hex(20),
        process=process,
    )


def _first_line(process: subprocess.Popen[bytes], timeout: float) -> str:
    """The child's first stdout line, or '' if it exits or stays silent ``timeout`` s."""
    found: list[str] = []
    reader = threading.Thread(
        target=lambda: found.append(process.stdout.readline().decode()),  # type: ignore[union-attr]
        daemon=True,
    )
    reader.start()
    reader.join(timeout)
    return found[0].strip() if found else ""


@pytest.fixture(scope="session", name="s3_server")
def s3_server_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A loopback S3 server with the bucket ``BUCKET``, stopped after the session."""
    with s3_server_with_bucket(tmp_path_factory.mktemp("s3") / "server.log", BUCKET) as server:
        yield server


@contextlib.contextmanager
def s3_server_with_bucket(log: Path, bucket: str) -> Iterator[S3Server]:
    """A started S3 server (its request log at ``log``) holding the empty ``bucket``,
    stopped when the ``with`` block ends."""
    server = start_s3_server(log)
    try:
        server.create_bucket(bucket)
        yield server
    finally:
        server.stop()


# -- the child -----------------------------------------------------------------------
def _one_at_a_time(
    app: Callable[..., Iterable[bytes]], ignore_conditions: bool
) -> Callable[..., list[bytes]]:
    """``app`` answering one request at a time (see the module docstring)."""
    lock = threading.Lock()

    def serial(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        if ignore_conditions:
            environ.pop("HTTP_IF_NONE_MATCH", None)
            environ.pop("HTTP_IF_MATCH", None)
        with lock:
            body = app(environ, start_response)
            try:
                return list(body)
            finally:
                with contextlib.suppress(AttributeError):
                    body.close()  # type: ignore[attr-defined]

    return serial


def _serve(ignore_conditions: bool) -> None:
    import logging

    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app = _one_at_a_time(DomainDispatcherApplication(create_backend_app), ignore_conditions)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    _serve("--ignore-conditions" in sys.argv[1:])
