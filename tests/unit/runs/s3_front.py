"""An S3 front on loopback for tests: forwards every request to a real S3 API (the
moto child) except the conditional PUTs a test scripts an answer for.

Moto's child decides one request at a time, so it never answers
``409 ConditionalRequestConflict`` (two conditional writes of one key in flight) and
it implements ``If-None-Match`` / ``If-Match``, so it never answers
``501 NotImplemented``. The front answers those itself: ``front.script(status, code,
key_suffix=..., header=...)`` makes the next matching conditional PUT get that error,
once; every other request goes through unchanged (its signature too: the front
forwards the client's ``Host`` header).
"""

from __future__ import annotations

import http.client
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["S3Front"]


@dataclass
class _Answer:
    status: int
    code: str
    key_suffix: str
    header: str


@dataclass
class S3Front:
    """A running front of the S3 API at ``backend`` (``host:port``)."""

    backend: str
    server: ThreadingHTTPServer = field(init=False)
    #: (method, path, the conditional header it carried, the status the front answered)
    seen: list[tuple[str, str, str, int]] = field(default_factory=list)
    _answers: list[_Answer] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        front = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                scripted = front._take(self.command, self.path, self.headers)
                condition = self.headers.get("If-None-Match") and "If-None-Match"
                condition = condition or (self.headers.get("If-Match") and "If-Match") or ""
                if scripted is not None:
                    payload = (
                        '<?xml version="1.0" encoding="UTF-8"?><Error>'
                        f"<Code>{scripted.code}</Code><Message>scripted by the test</Message>"
                        "</Error>"
                    ).encode()
                    front._record(self.command, self.path, condition, scripted.status)
                    self.send_response(scripted.status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                status, headers, answer = front._forward(
                    self.command, self.path, self.headers, body
                )
                front._record(self.command, self.path, condition, status)
                self.send_response(status)
                skip = {"transfer-encoding", "connection"}
                if self.command != "HEAD":  # a HEAD answer keeps the object's length
                    skip.add("content-length")
                    self.send_header("Content-Length", str(len(answer)))
                for name, value in headers:
                    if name.lower() not in skip:
                        self.send_header(name, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(answer)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        """``host:port`` of the front, as pyarrow's ``endpoint_override`` takes it."""
        return f"127.0.0.1:{self.server.server_address[1]}"

    def script(self, status: int, code: str, *, key_suffix: str, header: str) -> None:
        """The next PUT of a key ending in ``key_suffix`` that carries ``header``
        (``If-None-Match`` or ``If-Match``) is answered ``status`` ``code``, once."""
        with self._lock:
            self._answers.append(_Answer(status, code, key_suffix, header))

    def _take(self, method: str, path: str, headers: object) -> _Answer | None:
        if method != "PUT":
            return None
        key = path.split("?", 1)[0]
        with self._lock:
            for answer in self._answers:
                if key.endswith(answer.key_suffix) and headers.get(answer.header):  # type: ignore[attr-defined]
                    self._answers.remove(answer)
                    return answer
        return None

    def _record(self, method: str, path: str, condition: str, status: int) -> None:
        with self._lock:
            self.seen.append((method, path.split("?", 1)[0], condition, status))

    def _forward(
        self, method: str, path: str, headers: object, body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        host, port = self.backend.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for name, value in headers.items():  # type: ignore[attr-defined]
                if name.lower() != "connection":
                    conn.putheader(name, value)
            conn.endheaders(body or None)
            answer = conn.getresponse()
            return answer.status, answer.getheaders(), answer.read()
        finally:
            conn.close()

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        self.server.shutdown()
        self.server.server_close()
