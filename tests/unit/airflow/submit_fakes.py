"""Loopback HTTP servers for the submit tests: a JSON answer and a served handler."""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping


class JsonHandler(BaseHTTPRequestHandler):
    """Keep-alive (as Ray's dashboard), quiet, with :meth:`answer`."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def answer(self, code: int, body: Any) -> None:
        """``body`` as JSON (a ``str`` as it is) with status ``code``."""
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(code)
        headers = {"Content-Type": "application/json", "Content-Length": str(len(data))}
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def answer_listing(self, path: str, jobs: list[Any]) -> bool:
        """Answer Ray's version and job list routes; False for any other ``path``."""
        if path == "/api/version":
            self.answer(200, {"ray_version": "2.60.0"})
        elif path == "/api/jobs":
            self.answer(200, jobs)
        else:
            return False
        return True

    def answer_listing_or_logs(self, path: str, jobs: list[Any]) -> bool:
        """:meth:`answer_listing`, and an empty log for a job's ``/logs`` route."""
        if path.endswith("/logs"):
            self.answer(200, {"logs": ""})
            return True
        return self.answer_listing(path, jobs)

    def answer_job(self, path: str, jobs: Mapping[str, Any]) -> None:
        """The job whose id ends ``path``, or 404 where ``jobs`` has none."""
        job = jobs.get(path.rsplit("/", 1)[-1])
        if job is None:
            self.answer(404, f"Job {path} does not exist")
        else:
            self.answer(200, job)

    def answer_get(self, jobs: Mapping[str, Any]) -> None:
        """A ``GET`` of Ray's Jobs API over ``jobs`` (id to job): version, listing, empty
        logs, one job."""
        path = self.path.rstrip("/")
        if not self.answer_listing_or_logs(path, list(jobs.values())):
            self.answer_job(path, jobs)


def start(handler: type[BaseHTTPRequestHandler], port: int = 0) -> ThreadingHTTPServer:
    """``handler`` served on 127.0.0.1 (``port`` 0: a free one) by a daemon thread."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def stop(server: ThreadingHTTPServer | None) -> None:
    if server is not None:
        server.shutdown()
        server.server_close()


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """The address of ``handler`` served for the ``with`` block."""
    server = start(handler)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        stop(server)
