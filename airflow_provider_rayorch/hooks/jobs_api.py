"""The one request path to Ray's Jobs API, sync and async.

Both go through httpx (already an Airflow dependency) with the same address,
timeout, TLS verification (``True``, ``False`` or a CA-bundle path, honoured on
both paths), ``Authorization`` header and error mapping, and through one client per
hook (:class:`Clients`: one SSL context, kept-alive connections). A server that TLS does not
trust fails the handshake, so it never receives the token.

Errors map to the package's tree (``airflow_provider_rayorch.exceptions``), and the
message says which of two things happened:

- *no answer* (``status`` is ``None``): "cannot reach" (the connection was refused,
  the name does not resolve, no connection within the timeout) or "no answer from"
  (the server took the request and timed out or closed the connection). These are
  :class:`RayOrchClusterUnavailable` (transient), except a connection that fails
  before the Jobs API ever answered this hook in a request that names no job (a wrong
  host: retrying only delays the hint; a job's id says the API answered its submit)
  and a certificate that fails verification (only those TLS errors are permanent: an
  EOF in a handshake is a restarting server, like a reset).
- *an answer that is an error* (``status`` set): "answered HTTP <code>" with an
  excerpt of the body. HTTP 429/502/503/504 and Ray's 500 "No available agent ...
  please try again later" are transient; 401/403 are :class:`RayOrchAuthError`
  (naming which token was sent and where it came from, never its value); any
  other answer is permanent.

Every request retries its transient errors within one budget (``retry``, a
:class:`~airflow_provider_rayorch.common.polling.RetryPolicy`); the sync and async
paths ask the same :class:`~airflow_provider_rayorch.common.polling.Attempts` for
each wait. Spent, the budget raises a permanent ``RayOrchClusterError`` saying
"gave up after N tries" with the last error.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from airflow_provider_rayorch.common.polling import RETRY_POLICY, RetryPolicy
from airflow_provider_rayorch.exceptions import (
    RayOrchAuthError,
    RayOrchClusterError,
    RayOrchClusterUnavailable,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

T = TypeVar("T")

#: The waits between two tries, sync and async (tests replace them).
sleep = time.sleep
asleep = asyncio.sleep

__all__ = ["TRANSIENT_HTTP", "Clients", "Contact", "JobsApi", "TokenChoice"]

#: HTTP answers worth trying again later (a proxy or a restarting dashboard).
TRANSIENT_HTTP = frozenset({502, 503, 504})
#: What Ray's job head answers (HTTP 500, after about 10 s) while its job agent is not
#: up yet (ray/dashboard/modules/job/job_head.py): worth trying again later.
_TRY_LATER = "please try again later"


@dataclass(frozen=True)
class TokenChoice:
    """The token a request carries and where it came from (``source`` is for messages)."""

    token: str | None = field(default=None, repr=False)
    #: ``"connection"``, ``"local_head"`` or ``"none"``
    source: str = "none"
    #: the connection id or the head's token file path
    origin: str = ""

    def describe(self, conn: str | None = None) -> str:
        """Which token was sent; ``conn`` names the connection (default: by ``origin``)."""
        if self.source == "local_head":
            return f"the token of the provider's loopback head (token file {self.origin})"
        if self.source == "connection":
            return f"the token from {conn or f'the {self.origin!r} connection'}'s password"
        return "no token"

    def fix(self, conn: str) -> str:
        """The fix; ``conn`` names the connection (``"the 'x' connection"``)."""
        if self.source == "local_head":
            return (
                "the head at this address no longer accepts its token file: it was probably "
                "restarted by something else; clear the ray_head setup task to start a new head"
            )
        if self.source == "connection":
            return (
                f"{conn}'s password is not this cluster's Ray auth token: "
                "set it to the token (`ray get-auth-token` on the head prints it)"
            )
        return f"the cluster runs with Ray token auth: set its token as {conn}'s password"


def _verify_setting(verify: bool | str | None) -> bool | str:
    if verify is None:  # the connection form stores an empty field as null
        return True
    if isinstance(verify, str) and verify.strip().lower() in ("true", "1", "yes", ""):
        return True
    if isinstance(verify, str) and verify.strip().lower() in ("false", "0", "no"):
        return False
    return verify


def _is_certificate_failure(exc: BaseException) -> bool:
    """The server's certificate failed verification: the only permanent TLS error (an
    EOF or a reset during a handshake is a server going away, like any disconnect)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return True
        if "CERTIFICATE_VERIFY_FAILED" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _names_a_job(path: str) -> bool:
    """The request is about a submitted job (``/api/jobs/<id>...``): the Jobs API
    answered that job's submit, so a refused connection is a head restarting or busy,
    not a wrong address."""
    return path.startswith("/api/jobs/") and path.rstrip("/") != "/api/jobs"


@dataclass
class Contact:
    """Whether the Jobs API has answered yet, shared by every request of one hook."""

    answered: bool = False


@dataclass
class Clients:
    """The httpx clients of one hook, made on first use and reused by every request,
    so one SSL context and one kept-alive connection pool serve them all.

    An ``AsyncClient`` belongs to the event loop it was made in: a request from
    another loop gets a client of its own (the old one is dropped unclosed: it
    cannot be closed from another loop). ``close``/``aclose`` end them; a request
    after that makes a new one."""

    sync: httpx.Client | None = None
    async_: httpx.AsyncClient | None = None
    loop: Any = None

    def close(self) -> None:
        client, self.sync = self.sync, None
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        import asyncio

        client, loop = self.async_, self.loop
        if client is not None and loop is asyncio.get_running_loop():
            self.async_ = self.loop = None
            await client.aclose()


@dataclass(frozen=True)
class JobsApi:
    """Requests to one Jobs API address, with one timeout, TLS setting and token."""

    address: str
    conn_id: str
    timeout: float = 10.0
    verify: bool | str = True
    token: TokenChoice = field(default_factory=TokenChoice)
    #: ``False`` for the UI's Test action, whose connection id is a random temporary one
    name_conn: bool = True
    #: the hook's record of an answer (connection errors are transient only after one)
    contact: Contact = field(default_factory=Contact, compare=False)
    #: the hook's clients, shared by every request it makes
    clients: Clients = field(default_factory=Clients, compare=False)
    #: the budget for transient errors (``RetryPolicy(retries=0)``: one try)
    retry: RetryPolicy = RETRY_POLICY
    #: where "retrying" warnings go (the hook's log)
    log: Any = field(default=None, compare=False)

    @property
    def conn(self) -> str:
        """The connection, as messages name it."""
        return f"the {self.conn_id!r} connection" if self.name_conn else "this connection"

    # -- request pieces --------------------------------------------------------------
    def headers(self) -> dict[str, str]:
        token = self.token.token
        return {"Authorization": f"Bearer {token}"} if token else {}

    def ssl_context(self) -> ssl.SSLContext | bool:
        """What httpx's ``verify`` gets: a context for a CA bundle (file or directory),
        httpx's default context for ``True``, ``False`` only when asked for."""
        verify = _verify_setting(self.verify)
        if verify is False:
            return False
        if verify is True:
            return httpx.create_ssl_context()
        path = os.path.expanduser(str(verify))
        if not os.path.exists(path):
            raise RayOrchClusterError(
                f"{self.conn}'s extra `verify` names {path}, which does "
                "not exist: give the path of a CA bundle (PEM) readable by this worker, or true",
            )
        if os.path.isdir(path):
            return ssl.create_default_context(capath=path)
        return ssl.create_default_context(cafile=path)

    def _client_kwargs(self, verify: ssl.SSLContext | bool) -> dict[str, Any]:
        return {
            "base_url": self.address,
            "headers": self.headers(),
            "timeout": httpx.Timeout(self.timeout),
            "verify": verify,
            "follow_redirects": False,
            "trust_env": False,
        }

    # -- error mapping ---------------------------------------------------------------
    def hint(self) -> str:
        if not self.name_conn:
            return "check this connection's host/port and that the cluster's dashboard is running"
        return (
            f"check the {self.conn_id!r} connection's host (or the task's ray_address) "
            "and that the cluster's dashboard is running"
        )

    def transport_error(self, exc: httpx.HTTPError, method: str, path: str) -> RayOrchClusterError:
        """The error for a request that got no answer (``status`` is ``None``)."""
        where = f"the Ray Jobs API at {self.address}"
        kind = type(exc).__name__
        if _is_certificate_failure(exc):
            verify = _verify_setting(self.verify)
            trusted = "the default CA bundle" if verify is True else f"the CA bundle {verify}"
            return RayOrchClusterError(
                f"TLS verification of {where} failed during {method} {path} ({exc}); nothing "
                f"was sent. Fix: the server's certificate must be signed by {trusted}: set "
                f"{self.conn}'s extra `verify` to the CA bundle that signs it",
            )
        if isinstance(exc, httpx.ConnectTimeout):
            reason = f"no connection within {self.timeout:g}s"
        elif isinstance(exc, httpx.ConnectError):
            reason = "connection refused" if "refused" in str(exc).lower() else str(exc)
        elif isinstance(exc, httpx.TimeoutException):
            return RayOrchClusterUnavailable(
                f"no answer from {where} within {self.timeout:g}s during {method} {path} "
                f"({kind}): it took the request but did not answer (a busy or starting "
                f"head); {self.hint()}"
            )
        else:  # a disconnect or a reset after the request went out
            return RayOrchClusterUnavailable(
                f"no answer from {where} during {method} {path}: the connection closed "
                f"before an answer ({exc or 'closed'}; {kind}); {self.hint()}"
            )
        if not (self.contact.answered or _names_a_job(path)):
            return RayOrchClusterError(
                f"cannot reach {where} during {method} {path}: {reason} ({kind}); it has "
                f"never answered, so this is not retried; {self.hint()}",
            )
        return RayOrchClusterUnavailable(
            f"cannot reach {where} during {method} {path}: {reason} ({kind}); {self.hint()}"
        )

    def check(self, resp: httpx.Response, method: str, path: str, what: str = "") -> None:
        """Raise the mapped error unless ``resp`` is a 2xx answer."""
        code = resp.status_code
        if 200 <= code < 300:
            return
        body = self._body(resp)
        doing = what or f"{method} {path}"
        answered = f"the Ray Jobs API at {self.address} answered HTTP {code} to {doing}"
        if code in (401, 403):
            carried = self.token.describe(None if self.name_conn else self.conn)
            raise RayOrchAuthError(
                f"{answered} (refused: {body}); the request carried {carried}. "
                f"Fix: {self.token.fix(self.conn)}",
                status=code,
            )
        if code == 429:
            raise RayOrchClusterUnavailable(f"{answered} (too many requests): {body}", status=code)
        if code in TRANSIENT_HTTP:
            raise RayOrchClusterUnavailable(
                f"{answered} (the dashboard may be restarting or a proxy cannot reach it): {body}",
                status=code,
            )
        if code >= 500 and _TRY_LATER in body.lower():
            raise RayOrchClusterUnavailable(
                f"{answered} (its job agent is not up yet: a starting or busy head): {body}",
                status=code,
            )
        raise RayOrchClusterError(f"{answered}: {body}", status=code)

    def _answered(self, resp: httpx.Response) -> None:
        """Note an answer of the Jobs API itself (a 502/503/504 may be a proxy's)."""
        if resp.status_code not in TRANSIENT_HTTP:
            self.contact.answered = True

    def _body(self, resp: httpx.Response) -> str:
        """An excerpt of an error answer, never the token. Ray answers an unexpected
        error with a Python traceback, whose reason is on its last lines."""
        token = self.token.token
        text = resp.text.replace(token, "***") if token else resp.text  # before any cut
        if "Traceback (most recent call last)" in text:
            text = "... " + " ".join(text.split())[-400:]
        return text[:500]

    # -- sync ------------------------------------------------------------------------
    def client(self) -> httpx.Client:
        """The hook's sync client (made on first use)."""
        if self.clients.sync is None:
            self.clients.sync = httpx.Client(**self._client_kwargs(self.ssl_context()))
        return self.clients.sync

    def retrying(self, attempt: Callable[[], T], what: str) -> T:
        """``attempt()``, tried again after each transient error within :attr:`retry`."""
        tries = self.retry.attempts(what, self.log)
        while True:
            try:
                return attempt()
            except RayOrchClusterError as exc:
                sleep(tries.failed(exc))

    def send(
        self, method: str, path: str, *, what: str = "", allow_404: bool = False, **kwargs: Any
    ) -> httpx.Response | None:
        """One try of a request: ``None`` for a 404 when ``allow_404``; mapped errors."""
        try:
            resp = self.client().request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise self.transport_error(exc, method, path) from None
        return self._checked(resp, method, path, what, allow_404)

    def request(
        self, method: str, path: str, *, what: str = "", allow_404: bool = False, **kwargs: Any
    ) -> httpx.Response | None:
        """:meth:`send`, its transient errors retried within the budget."""
        return self.retrying(
            lambda: self.send(method, path, what=what, allow_404=allow_404, **kwargs),
            what or f"{method} {path}",
        )

    def json(self, method: str, path: str, *, what: str = "", **kwargs: Any) -> Any:
        resp = self.request(method, path, what=what, **kwargs)
        assert resp is not None
        return resp.json()

    def _checked(
        self, resp: httpx.Response, method: str, path: str, what: str, allow_404: bool
    ) -> httpx.Response | None:
        self._answered(resp)
        if allow_404 and resp.status_code == 404:
            return None
        self.check(resp, method, path, what)
        return resp

    # -- async -----------------------------------------------------------------------
    async def aclient(self) -> httpx.AsyncClient:
        """The hook's async client for the running event loop (made on first use)."""
        loop = asyncio.get_running_loop()
        if self.clients.async_ is None or self.clients.loop is not loop:
            verify = await asyncio.to_thread(self.ssl_context)  # reads CA files: off the loop
            self.clients.async_ = httpx.AsyncClient(**self._client_kwargs(verify))
            self.clients.loop = loop
        return self.clients.async_

    async def aretrying(self, attempt: Callable[[], Awaitable[T]], what: str) -> T:
        """:meth:`retrying` for a coroutine (the same budget and rule)."""
        tries = self.retry.attempts(what, self.log)
        while True:
            try:
                return await attempt()
            except RayOrchClusterError as exc:
                await asleep(tries.failed(exc))

    async def asend(
        self, method: str, path: str, *, what: str = "", allow_404: bool = False, **kwargs: Any
    ) -> httpx.Response | None:
        """:meth:`send`, awaited (same TLS, headers, timeout and errors)."""
        client = await self.aclient()
        try:
            resp = await client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise self.transport_error(exc, method, path) from None
        return self._checked(resp, method, path, what, allow_404)

    async def arequest(
        self, method: str, path: str, *, what: str = "", allow_404: bool = False, **kwargs: Any
    ) -> httpx.Response | None:
        """:meth:`request`, awaited."""
        return await self.aretrying(
            lambda: self.asend(method, path, what=what, allow_404=allow_404, **kwargs),
            what or f"{method} {path}",
        )

    async def ajson(self, method: str, path: str, *, what: str = "", **kwargs: Any) -> Any:
        resp = await self.arequest(method, path, what=what, **kwargs)
        assert resp is not None
        return resp.json()
