"""RayOrchHook: the ``rayorch`` connection and Ray's Jobs API.

Connection fields:

- ``host``: a Ray Jobs API (dashboard) address such as ``http://head:8265``; ``port``
  and ``schema`` (``http``/``https``) fill in what ``host`` leaves out. Empty host:
  an embedded local Ray, started in the worker for the run and stopped after it.
- ``password``: the Ray auth token, sent as ``Authorization: Bearer ...`` and masked.
- ``extra``: ``runtime_env`` (dict), ``run_store`` (filesystem URI), ``namespace``,
  ``ray_init_kwargs`` (embedded Ray only), ``dashboard_url`` (browser address of the
  dashboard when it differs from ``host``), ``verify`` (TLS), ``timeout`` (seconds).

With no ``rayorch_default`` connection defined, the hook falls back to the embedded
local Ray.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from airflow_provider_rayorch.exceptions import RayOrchClusterError

if TYPE_CHECKING:
    from ray.job_submission import JobSubmissionClient

    from airflow_provider_rayorch.rayorch.store import RunStore

__all__ = ["ACTIVE_STATES", "TERMINAL_STATES", "RayOrchHook", "RayOrchSettings"]

DEFAULT_PORT = 8265
ACTIVE_STATES = frozenset({"PENDING", "RUNNING"})
TERMINAL_STATES = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})


def _as_dict(value: Any, name: str) -> dict[str, Any]:
    if value in (None, ""):
        return {}
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, Mapping):
        raise ValueError(f"connection extra {name!r} must be a JSON object")
    return dict(value)


def default_run_store() -> str:
    """``$AIRFLOW_HOME/rayorch/runs`` (a local path: shared only on one machine)."""
    home = os.environ.get("AIRFLOW_HOME") or os.path.join(os.path.expanduser("~"), "airflow")
    return os.path.join(home, "rayorch", "runs")


def merge_runtime_env(
    base: Mapping[str, Any], override: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Operator ``runtime_env`` over the connection's: ``env_vars`` merged key by key,
    ``py_modules`` concatenated, every other key replaced."""
    merged = dict(base)
    for key, value in (override or {}).items():
        if key == "env_vars" and isinstance(value, Mapping):
            merged[key] = {**dict(merged.get(key) or {}), **value}
        elif key == "py_modules" and isinstance(value, list):
            merged[key] = [*list(merged.get(key) or []), *value]
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True)
class RayOrchSettings:
    """What a ``rayorch`` connection says, parsed."""

    address: str | None = None
    token: str | None = field(default=None, repr=False)
    runtime_env: dict[str, Any] = field(default_factory=dict)
    run_store: str = field(default_factory=default_run_store)
    namespace: str | None = None
    ray_init_kwargs: dict[str, Any] = field(default_factory=dict)
    dashboard_url: str | None = None
    verify: bool | str = True
    timeout: float = 10.0

    @property
    def embedded(self) -> bool:
        return not self.address

    @classmethod
    def from_connection(cls, conn: Any) -> RayOrchSettings:
        extra = conn.extra_dejson if conn is not None else {}
        host = (getattr(conn, "host", None) or "").strip()
        address = None
        if host:
            scheme = getattr(conn, "schema", None) or "http"
            address = host if "://" in host else f"{scheme}://{host}"
            hostport = address.split("://", 1)[1]
            if ":" not in hostport.split("/", 1)[0]:
                address = f"{address.rstrip('/')}:{conn.port or DEFAULT_PORT}"
            address = address.rstrip("/")
        token = getattr(conn, "password", None) or None
        return cls(
            address=address,
            token=token,
            runtime_env=_as_dict(extra.get("runtime_env"), "runtime_env"),
            run_store=str(extra.get("run_store") or default_run_store()),
            namespace=extra.get("namespace") or None,
            ray_init_kwargs=_as_dict(extra.get("ray_init_kwargs"), "ray_init_kwargs"),
            dashboard_url=(extra.get("dashboard_url") or None),
            verify=extra.get("verify", True),
            timeout=float(extra.get("timeout", 10.0)),
        )


class RayOrchHook(BaseHook):
    """Talks to the Ray cluster of a ``rayorch`` connection.

    :param rayorch_conn_id: the connection; a missing ``rayorch_default`` means embedded Ray.
    :param address: overrides the connection's ``host`` (for example a loopback head
        started by a setup task).
    :param timeout: seconds to wait for the Jobs API before failing with a clear error.
    """

    conn_name_attr = "rayorch_conn_id"
    default_conn_name = "rayorch_default"
    conn_type = "rayorch"
    hook_name = "RayOrch"

    def __init__(
        self,
        rayorch_conn_id: str = default_conn_name,
        *,
        address: str | None = None,
        timeout: float | None = None,
    ) -> None:
        super().__init__()
        self.rayorch_conn_id = rayorch_conn_id
        self._address_override = address or None
        self._timeout_override = timeout
        self._client: JobSubmissionClient | None = None

    # -- settings --------------------------------------------------------------------
    def _finish(self, conn: Any) -> RayOrchSettings:
        settings = RayOrchSettings.from_connection(conn)
        if settings.token:
            from airflow.sdk.log import mask_secret

            mask_secret(settings.token)
        changes: dict[str, Any] = {}
        if self._address_override:
            changes["address"] = self._address_override.rstrip("/")
        if self._timeout_override is not None:
            changes["timeout"] = float(self._timeout_override)
        if changes:
            settings = RayOrchSettings(**{**settings.__dict__, **changes})
        return settings

    def _missing(self, exc: Exception) -> None:
        if self.rayorch_conn_id != self.default_conn_name:
            raise exc
        self.log.info("No %r connection: using an embedded local Ray", self.default_conn_name)

    @cached_property
    def settings(self) -> RayOrchSettings:
        try:
            conn = self.get_connection(self.rayorch_conn_id)
        except AirflowNotFoundException as exc:
            self._missing(exc)
            conn = None
        return self._finish(conn)

    async def asettings(self) -> RayOrchSettings:
        """The settings, read with the async connection API (for triggers)."""
        if "settings" in self.__dict__:
            return self.settings
        try:
            conn = await self.aget_connection(self.rayorch_conn_id)
        except AirflowNotFoundException as exc:
            self._missing(exc)
            conn = None
        settings = self._finish(conn)
        self.__dict__["settings"] = settings
        return settings

    @property
    def embedded(self) -> bool:
        return self.settings.embedded

    @property
    def run_store_uri(self) -> str:
        return self.settings.run_store

    def run_store(self) -> RunStore:
        from airflow_provider_rayorch.rayorch.store import RunStore

        return RunStore(self.settings.run_store)

    def runtime_env(self, override: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The connection's ``runtime_env`` with the operator's merged over it."""
        return merge_runtime_env(self.settings.runtime_env, override)

    def _headers(self) -> dict[str, str]:
        token = self.settings.token
        return {"Authorization": f"Bearer {token}"} if token else {}

    # -- Jobs API ----------------------------------------------------------------------
    def _require_address(self) -> str:
        address = self.settings.address
        if not address:
            raise RayOrchClusterError(
                f"connection {self.rayorch_conn_id!r} has no host: the Ray Jobs API needs a "
                "cluster address such as http://head:8265"
            )
        return address

    def check_reachable(self) -> str:
        """GET ``/api/version`` within ``timeout`` seconds; returns the cluster's Ray version."""
        import requests

        address = self._require_address()
        timeout = self.settings.timeout
        try:
            resp = requests.get(
                f"{address}/api/version",
                headers=self._headers(),
                timeout=(timeout, timeout),
                verify=self.settings.verify,
            )
        except requests.RequestException as exc:
            raise RayOrchClusterError(
                f"cannot reach the Ray Jobs API at {address} within {timeout:g}s "
                f"({type(exc).__name__}); check the {self.rayorch_conn_id!r} connection's host "
                "and that the cluster's dashboard is running"
            ) from None
        if resp.status_code in (401, 403):
            raise RayOrchClusterError(
                f"the Ray cluster at {address} refused the auth token (HTTP {resp.status_code}); "
                f"set the Ray auth token as the {self.rayorch_conn_id!r} connection's password"
            )
        if resp.status_code != 200:
            raise RayOrchClusterError(f"Ray Jobs API at {address} answered HTTP {resp.status_code}")
        return str(resp.json().get("ray_version", "unknown"))

    def get_conn(self) -> JobSubmissionClient:
        """A ``JobSubmissionClient`` for the connection (checked reachable first)."""
        if self._client is None:
            from ray.job_submission import JobSubmissionClient

            for var in ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS"):
                if os.environ.get(var):
                    self.log.warning(
                        "%s is set in this worker; Ray's client lets it override the "
                        "connection's host %s",
                        var,
                        self.settings.address,
                    )
            self.check_reachable()
            try:
                self._client = JobSubmissionClient(
                    self._require_address(), headers=self._headers(), verify=self.settings.verify
                )
            except (ConnectionError, RuntimeError) as exc:
                raise RayOrchClusterError(f"Ray Jobs API client failed: {exc}") from None
        return self._client

    def submit_job(
        self,
        entrypoint: str,
        *,
        submission_id: str,
        runtime_env: Mapping[str, Any] | None = None,
        metadata: Mapping[str, str] | None = None,
        entrypoint_num_cpus: float | None = None,
    ) -> str:
        """Submit a job; ``runtime_env`` is merged over the connection's."""
        env = self.runtime_env(runtime_env)
        if self.settings.namespace:
            env.setdefault("env_vars", {})
            env["env_vars"] = {**env["env_vars"], "RAY_NAMESPACE": self.settings.namespace}
        try:
            return str(
                self.get_conn().submit_job(
                    entrypoint=entrypoint,
                    submission_id=submission_id,
                    runtime_env=env or None,
                    metadata=dict(metadata or {}),
                    entrypoint_num_cpus=entrypoint_num_cpus,
                )
            )
        except RuntimeError as exc:
            raise RayOrchClusterError(f"submitting job {submission_id!r} failed: {exc}") from None

    def _request(self, method: str, path: str) -> Any:
        """One Jobs API call bounded by the connection's timeout; returns the response."""
        import requests

        address = self._require_address()
        timeout = self.settings.timeout
        try:
            return requests.request(
                method,
                f"{address}{path}",
                headers=self._headers(),
                timeout=(timeout, timeout),
                verify=self.settings.verify,
            )
        except requests.RequestException as exc:
            raise RayOrchClusterError(
                f"cannot reach the Ray Jobs API at {address} within {timeout:g}s "
                f"({type(exc).__name__}) during {method} {path}"
            ) from None

    def _json(self, method: str, path: str) -> Any:
        resp = self._request(method, path)
        if resp.status_code != 200:
            raise RayOrchClusterError(
                f"{method} {path} failed: HTTP {resp.status_code}: {resp.text[:500]}"
            )
        return resp.json()

    def get_job_info(self, job_id: str) -> dict[str, Any] | None:
        """``{"status", "message", "metadata", ...}`` or ``None`` when no such job exists."""
        resp = self._request("GET", f"/api/jobs/{job_id}")
        if resp.status_code == 404:
            return None
        if resp.status_code != 200:
            raise RayOrchClusterError(
                f"reading job {job_id!r} failed: HTTP {resp.status_code}: {resp.text[:500]}"
            )
        return _info_dict(resp.json())

    def get_job_status(self, job_id: str) -> str:
        """The job's status (``PENDING``, ``RUNNING``, ``SUCCEEDED``, ``FAILED``,
        ``STOPPED``), or ``MISSING`` when the cluster does not know it."""
        info = self.get_job_info(job_id)
        return "MISSING" if info is None else str(info["status"])

    def find_active_job(self, run_id: str) -> str | None:
        """The submission id of a PENDING/RUNNING job of ``run_id``, if any."""
        for info in self._json("GET", "/api/jobs/"):
            data = _info_dict(info)
            if (data.get("metadata") or {}).get("rayorch_run_id") == run_id and (
                data["status"] in ACTIVE_STATES
            ):
                return str(data["submission_id"])
        return None

    def stop_job(self, job_id: str) -> bool:
        """Ask the job to stop (never deletes it: Ray deletes terminal jobs only)."""
        try:
            return bool(self._json("POST", f"/api/jobs/{job_id}/stop").get("stopped"))
        except RayOrchClusterError as exc:
            self.log.warning("stopping job %s failed: %s", job_id, exc)
            return False

    def get_job_logs(self, job_id: str) -> str:
        return str(self._json("GET", f"/api/jobs/{job_id}/logs").get("logs", ""))

    def dashboard_job_url(self, job_id: str) -> str | None:
        base = self.settings.dashboard_url or self.settings.address
        return None if not base else f"{base.rstrip('/')}/#/jobs/{job_id}"

    # -- async variants (for triggers) ---------------------------------------------
    async def aget_job_info(self, job_id: str) -> dict[str, Any] | None:
        """Async ``get_job_info``: one GET with the connection's timeout."""
        import aiohttp

        settings = await self.asettings()
        address = settings.address or self._require_address()
        timeout = aiohttp.ClientTimeout(total=settings.timeout)
        ssl: Any = None if settings.verify is True else False
        try:
            async with (
                aiohttp.ClientSession(headers=self._headers(), timeout=timeout) as session,
                session.get(f"{address}/api/jobs/{job_id}", ssl=ssl) as resp,
            ):
                if resp.status == 404:
                    return None
                if resp.status != 200:
                    raise RayOrchClusterError(
                        f"reading job {job_id!r} failed: HTTP {resp.status}: {await resp.text()}"
                    )
                return dict(await resp.json())
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise RayOrchClusterError(
                f"cannot reach the Ray Jobs API at {address} ({type(exc).__name__})"
            ) from None

    async def aget_job_status(self, job_id: str) -> str:
        info = await self.aget_job_info(job_id)
        return "MISSING" if info is None else str(info["status"])

    async def astop_job(self, job_id: str) -> bool:
        await self.asettings()
        return await asyncio.to_thread(self.stop_job, job_id)

    async def atail_job_logs(self, job_id: str) -> AsyncIterator[str]:
        """Yield chunks of the job's log as they are written (ends with the stream,
        which is not the end of the job: poll the status separately)."""
        await self.asettings()
        client = await asyncio.to_thread(self.get_conn)
        async for chunk in client.tail_job_logs(job_id):
            yield chunk

    # -- UI ---------------------------------------------------------------------------
    def test_connection(self) -> tuple[bool, str]:
        if self.embedded:
            return True, "No host: runs use an embedded local Ray in the worker"
        try:
            version = self.check_reachable()
        except RayOrchClusterError as exc:
            return False, str(exc)
        return True, f"Ray Jobs API reachable at {self.settings.address} (Ray {version})"


def _info_dict(info: Any) -> dict[str, Any]:
    if isinstance(info, Mapping):
        data = dict(info)
    elif hasattr(info, "dict"):
        data = dict(info.dict())
    else:
        data = dict(vars(info))
    status = data.get("status")
    data["status"] = str(getattr(status, "value", status))
    return data
