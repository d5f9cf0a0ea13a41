"""RayOrchHook: the ``rayorch`` connection and Ray's Jobs API.

Connection fields:

- ``host``: a Ray Jobs API (dashboard) address such as ``http://head:8265``; ``port``
  and ``schema`` (``http``/``https``) fill in what ``host`` leaves out. Empty host:
  an embedded local Ray, started in the worker for the run and stopped after it.
- ``password``: the Ray auth token, sent as ``Authorization: Bearer ...`` and masked.
  For the address of a loopback head this provider started (``local_head=True``),
  that head's own token (read from its token file) is sent instead.
- ``extra``: ``runtime_env`` (dict), ``run_store`` (filesystem URI, never with
  credentials), ``run_store_options`` (pyarrow filesystem options: endpoint, region,
  keys), ``namespace``, ``ray_init_kwargs`` (embedded Ray only), ``dashboard_url``
  (browser address of the dashboard when it differs from ``host``), ``verify`` (TLS),
  ``timeout`` (seconds).

Every secret value (token, secret run-store options, ``runtime_env.env_vars``
values, secret-named ``ray_init_kwargs``) is registered with Airflow's secrets
masker as soon as the settings are read; the run-store options reach a Ray job's
driver through the cluster's key-value store (:mod:`.handoff`), never its
``runtime_env`` or command line.

With no ``rayorch_default`` connection defined, the hook falls back to the embedded
local Ray.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from airflow_provider_rayorch.common import local_heads
from airflow_provider_rayorch.common.polling import RETRY_POLICY, RetryPolicy
from airflow_provider_rayorch.common.states import JobStatus
from airflow_provider_rayorch.exceptions import (
    RayOrchClusterError,
    RayOrchClusterUnavailable,
    RayOrchConnectionNotFound,
)
from airflow_provider_rayorch.hooks.jobs_api import Clients, Contact, JobsApi, TokenChoice
from airflow_provider_rayorch.hooks.settings import RayOrchSettings, merge_runtime_env
from airflow_provider_rayorch.runs.secrets import ray_init_secrets

if TYPE_CHECKING:
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["RayOrchHook", "mask_secrets", "open_run_store"]


class RayOrchHook(BaseHook):
    """Talks to the Ray cluster of a ``rayorch`` connection.

    Every Jobs-API call, sync or async, goes through one
    :class:`~airflow_provider_rayorch.hooks.jobs_api.JobsApi` (httpx): same timeout,
    TLS verification, token, error mapping and retries of transient errors.

    :param rayorch_conn_id: the connection; a missing ``rayorch_default`` means embedded Ray.
    :param address: overrides the connection's ``host`` (for example a loopback head
        started by a setup task).
    :param timeout: seconds to wait for the Jobs API before failing with a clear error.
    :param answered_before: the Jobs API is known to have answered (for example a
        setup task saw its head answer), so connection errors are transient from the
        first request. Otherwise a refused or unresolvable first contact fails at once,
        unless the request is about a job (its id: the API answered its submit).
    :param retry: the budget for transient errors of every request (default: 5 retries
        waiting 1, 2, 4, 8, 16 s); a waiter passes ``RetryPolicy(base_s=<its poll interval>)``.
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
        answered_before: bool = False,
        retry: RetryPolicy = RETRY_POLICY,
    ) -> None:
        super().__init__()
        self.retry = retry
        self.rayorch_conn_id = rayorch_conn_id
        self._address_override = (address or "").strip() or None
        self._timeout_override = timeout
        #: Set once the Jobs API answers: only then are connection errors transient.
        self._contact = Contact(answered=answered_before)
        #: One sync and one async httpx client for every request of this hook.
        self._clients = Clients()
        weakref.finalize(self, self._clients.close)  # a hook nobody closed
        #: ``False`` while the UI's Test action runs (its connection id is a random one).
        self._name_conn = True

    # -- settings --------------------------------------------------------------------
    def _finish(self, conn: Any) -> RayOrchSettings:
        settings = RayOrchSettings.from_connection(conn)
        changes: dict[str, Any] = {}
        if self._address_override:
            changes["address"] = self._address_override.rstrip("/")
        if self._timeout_override is not None:
            changes["timeout"] = float(self._timeout_override)
        head = local_heads.lookup(changes.get("address", settings.address))
        if head is not None:  # the provider's own head: its token wins over the connection's
            changes.update(
                token=local_heads.read_token(head),
                token_source="local_head",
                local_head_token_path=head.token_path,
            )
        if changes:
            settings = replace(settings, **changes)
        mask_secrets(settings.secrets())
        return settings

    def _missing(self, exc: Exception) -> None:
        if self.rayorch_conn_id != self.default_conn_name:
            raise RayOrchConnectionNotFound(_not_found(self.rayorch_conn_id)) from exc
        if self._address_override:
            self.log.info(
                "No %r connection: using the Ray Jobs API at %s (the task's ray_address)",
                self.default_conn_name,
                self._address_override,
            )
        else:
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
        settings = await asyncio.to_thread(self._finish, conn)  # may read a token file
        self.__dict__["settings"] = settings
        return settings

    @property
    def embedded(self) -> bool:
        return self.settings.embedded

    @property
    def is_local_head(self) -> bool:
        """The address is a loopback head this provider started (it shares this
        machine's files and the worker's ``sys.path``)."""
        return self.settings.is_local_head

    @property
    def run_store_uri(self) -> str:
        return self.settings.run_store

    @property
    def run_store_options(self) -> dict[str, Any]:
        """The connection's ``run_store_options`` (pyarrow filesystem options; may hold
        secrets, which the hook has registered with Airflow's secrets masker)."""
        return dict(self.settings.run_store_options)

    def read_summary_outputs(
        self, summary: Mapping[str, Any], port: str = "out"
    ) -> list[dict[str, Any]]:
        """The committed output rows of the run (or microbatch) ``summary`` describes,
        read with this connection's ``run_store_options`` (an S3-compatible endpoint,
        keys): ``{"source", "outcome", "cause", "value"}`` per source, by source."""
        from airflow_provider_rayorch.runs.store import read_summary_outputs

        return read_summary_outputs(dict(summary), port, options=self.run_store_options)

    def run_store(self, uri: str | None = None) -> RunStore:
        """The run store at ``uri`` (default: the connection's ``run_store``), opened with
        the connection's ``run_store_options``."""
        from airflow_provider_rayorch.runs.store import RunStore

        return RunStore(uri or self.settings.run_store, self.settings.run_store_options)

    async def arun_store(self, uri: str | None = None) -> RunStore:
        """``run_store`` for triggers: the async connection API, pyarrow off the loop."""
        settings = await self.asettings()
        return await asyncio.to_thread(self.run_store, uri or settings.run_store)

    def runtime_env(self, override: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The connection's ``runtime_env`` with the operator's merged over it."""
        return merge_runtime_env(self.settings.runtime_env, override)

    # -- Jobs API ----------------------------------------------------------------------
    def _require_address(self, settings: RayOrchSettings | None = None) -> str:
        address = (settings or self.settings).address
        if not address:
            raise RayOrchClusterError(
                f"connection {self.rayorch_conn_id!r} has no host: the Ray Jobs API needs a "
                "cluster address such as http://head:8265",
            )
        return address

    def _api_for(self, settings: RayOrchSettings) -> JobsApi:
        origin = {
            "connection": self.rayorch_conn_id,
            "local_head": settings.local_head_token_path or "",
        }.get(settings.token_source, "")
        return JobsApi(
            address=self._require_address(settings),
            conn_id=self.rayorch_conn_id,
            timeout=settings.timeout,
            verify=settings.verify,
            token=TokenChoice(settings.token, settings.token_source, origin),
            name_conn=self._name_conn,
            contact=self._contact,
            clients=self._clients,
            retry=self.retry,
            log=self.log,
        )

    @property
    def api(self) -> JobsApi:
        """The request path to this connection's Jobs API."""
        return self._api_for(self.settings)

    async def aapi(self) -> JobsApi:
        return self._api_for(await self.asettings())

    def check_reachable(self) -> str:
        """GET ``/api/version`` within ``timeout`` seconds; returns the cluster's Ray version."""
        for var in ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS"):
            if os.environ.get(var):
                self.log.debug("%s is set in this worker; the hook ignores it", var)
        data = self.api.json("GET", "/api/version", what="reading the Ray version")
        return str(data.get("ray_version", "unknown"))

    def get_conn(self) -> JobsApi:
        """The Jobs API request path (checked reachable first)."""
        self.check_reachable()
        return self.api

    def submit_job(
        self,
        entrypoint: str,
        *,
        submission_id: str,
        runtime_env: Mapping[str, Any] | None = None,
        metadata: Mapping[str, str] | None = None,
        entrypoint_num_cpus: float | None = None,
    ) -> str:
        """Submit a job once; ``runtime_env`` is merged over the connection's and its
        local ``working_dir`` / ``py_modules`` are uploaded first.

        Idempotent by ``submission_id``: when the POST ends without telling whether Ray
        took the job (no answer in time, a dropped connection, an HTTP 5xx), or Ray
        says the id is taken, this asks ``GET /api/jobs/<id>`` and returns the id when
        the job exists; otherwise the POST is tried again within the request path's
        budget (:meth:`JobsApi.retrying`)."""
        from airflow_provider_rayorch.hooks.handoff import deposit_run_store_options
        from airflow_provider_rayorch.hooks.packages import prepare_runtime_env

        env = self.runtime_env(runtime_env)
        mask_secrets(ray_init_secrets(None, env))
        api = self.api
        # Ray shows a job's runtime_env to every worker: it names the options' entry only
        handed = deposit_run_store_options(api, submission_id, self.settings.run_store_options)
        if self.settings.namespace:
            handed["RAY_NAMESPACE"] = self.settings.namespace
        if handed:
            env["env_vars"] = {**dict(env.get("env_vars") or {}), **handed}
        body: dict[str, Any] = {
            "entrypoint": entrypoint,
            "submission_id": submission_id,
            "runtime_env": prepare_runtime_env(api, env) or None,
            "metadata": dict(metadata or {}),
        }
        if entrypoint_num_cpus is not None:
            body["entrypoint_num_cpus"] = entrypoint_num_cpus
        what = f"submitting job {submission_id!r}"
        return api.retrying(lambda: self._post_job(api, body, what), what)

    def _post_job(self, api: JobsApi, body: dict[str, Any], what: str) -> str:
        """One try of a submit: the job's id, or a transient error when Ray has no job
        under this id after a POST whose outcome is unknown."""
        sid = str(body["submission_id"])
        try:
            resp = api.send("POST", "/api/jobs/", what=what, json=body)
        except RayOrchClusterError as exc:
            if not _outcome_unknown(exc):
                raise
            if self.get_job_info(sid) is not None:
                self.log.warning("%s: %s; Ray has the job all the same: attaching to it", what, exc)
                return sid
            raise RayOrchClusterUnavailable(
                f"{exc}; Ray has no job {sid!r}, so it is submitted again", status=exc.status
            ) from exc
        assert resp is not None
        data = resp.json()
        return str(data.get("submission_id") or data.get("job_id") or sid)

    def get_job_info(self, job_id: str) -> dict[str, Any] | None:
        """``{"status", "message", "metadata", ...}`` or ``None`` when no such job exists."""
        resp = self.api.request(
            "GET", f"/api/jobs/{job_id}", what=f"reading job {job_id!r}", allow_404=True
        )
        return None if resp is None else _info_dict(resp.json())

    def get_job_status(self, job_id: str) -> JobStatus:
        """The job's status, or ``MISSING`` when the cluster does not know it."""
        info = self.get_job_info(job_id)
        return JobStatus.MISSING if info is None else JobStatus.parse(info["status"])

    def find_active_job(self, run_id: str) -> str | None:
        """The submission id of a PENDING/RUNNING job of ``run_id``, if any."""
        for info in self.api.json("GET", "/api/jobs/", what="listing jobs"):
            data = _info_dict(info)
            if (data.get("metadata") or {}).get("rayorch_run_id") == run_id and (
                JobStatus.parse(data["status"]).is_active
            ):
                return str(data["submission_id"])
        return None

    def stop_job(self, job_id: str) -> bool:
        """Ask the job to stop, once (a kill must not wait out a retry budget; never
        deletes it: Ray deletes terminal jobs only)."""
        try:
            path = f"/api/jobs/{job_id}/stop"
            resp = self.api.send("POST", path, what=f"stopping job {job_id!r}")
            return bool(resp is not None and resp.json().get("stopped"))
        except RayOrchClusterError as exc:
            self.log.warning("stopping job %s failed: %s", job_id, exc)
            return False

    def get_job_logs(self, job_id: str) -> str:
        path = f"/api/jobs/{job_id}/logs"
        return str(self.api.json("GET", path, what=f"reading job {job_id!r} logs").get("logs", ""))

    def dashboard_job_url(self, job_id: str) -> str | None:
        base = self.settings.dashboard_url or self.settings.address
        return None if not base else f"{base.rstrip('/')}/#/jobs/{job_id}"

    # -- async variants (for triggers) ---------------------------------------------
    async def aget_job_info(self, job_id: str) -> dict[str, Any] | None:
        """Async ``get_job_info``: the same request path, awaited."""
        api = await self.aapi()
        resp = await api.arequest(
            "GET", f"/api/jobs/{job_id}", what=f"reading job {job_id!r}", allow_404=True
        )
        return None if resp is None else _info_dict(resp.json())

    async def aget_job_status(self, job_id: str) -> JobStatus:
        info = await self.aget_job_info(job_id)
        return JobStatus.MISSING if info is None else JobStatus.parse(info["status"])

    async def aget_job_logs(self, job_id: str) -> str:
        api = await self.aapi()
        path = f"/api/jobs/{job_id}/logs"
        data = await api.ajson("GET", path, what=f"reading job {job_id!r} logs")
        return str(data.get("logs", ""))

    async def astop_job(self, job_id: str) -> bool:
        """:meth:`stop_job`, awaited (one try)."""
        try:
            api = await self.aapi()
            resp = await api.asend("POST", f"/api/jobs/{job_id}/stop", what=f"stopping {job_id!r}")
        except RayOrchClusterError as exc:
            self.log.warning("stopping job %s failed: %s", job_id, exc)
            return False
        return bool(resp is not None and resp.json().get("stopped"))

    async def atail_job_logs(self, job_id: str, interval: float = 2.0) -> AsyncIterator[str]:
        """Yield the job log's new text every ``interval`` seconds (until cancelled: the
        end of a log is not the end of a job, so poll the status separately)."""
        printed = 0
        while True:
            try:
                logs = await self.aget_job_logs(job_id)
            except RayOrchClusterError as exc:
                if not exc.transient:
                    raise
                logs = ""
            if len(logs) > printed:
                yield logs[printed:]
                printed = len(logs)
            await asyncio.sleep(interval)

    def close(self) -> None:
        """Close this hook's sync client (a later request opens a new one)."""
        self._clients.close()

    async def aclose(self) -> None:
        """Close this hook's async client of the running event loop."""
        await self._clients.aclose()

    # -- UI ---------------------------------------------------------------------------
    def test_connection(self) -> tuple[bool, str]:
        """The UI's Test action. Airflow tests the form's values under a random temporary
        connection id, so the messages say "this connection" instead of naming it."""
        self._name_conn = False
        try:
            if self.embedded:
                return True, "No host: runs use an embedded local Ray in the worker"
            version = self.check_reachable()
        except RayOrchClusterError as exc:
            return False, str(exc)
        except ValueError as exc:  # an extra that does not parse, a run_store with secrets
            return False, f"this connection's extra is not usable: {exc}"
        finally:
            self._name_conn = True
        return True, f"Ray Jobs API reachable at {self.settings.address} (Ray {version})"


def open_run_store(uri: str, conn_id: str | None = None) -> RunStore:
    """The run store at ``uri`` with connection ``conn_id``'s ``run_store_options``
    (default ``rayorch_default``); a connection that no longer exists gives none.
    For readers that only know a store's URI and the connection that wrote it."""
    name = conn_id or RayOrchHook.default_conn_name
    try:
        return RayOrchHook(name).run_store(uri)
    except AirflowNotFoundException:
        from airflow_provider_rayorch.runs.store import RunStore

        return RunStore(uri)


def _not_found(conn_id: str) -> str:
    env = "AIRFLOW_CONN_" + "".join(c if c.isalnum() else "_" for c in conn_id).upper()
    return (
        f"rayorch_conn_id {conn_id!r}: no such connection. Airflow looked it up in its "
        f"secrets backends (the environment variable {env}, any configured backend) and "
        "its metadata database (Admin > Connections). Define it (airflow connections add "
        f"{conn_id} --conn-type rayorch --conn-host http://<ray head>:8265, or in the UI), "
        f"or, for an embedded local Ray in the worker, leave rayorch_conn_id at its default "
        f"{RayOrchHook.default_conn_name!r} and define no connection of that name"
    )


def mask_secrets(values: list[str]) -> None:
    """Register ``values`` with Airflow's secrets masker (task and supervisor logs)."""
    if not values:
        return
    from airflow.sdk.log import mask_secret

    for value in values:
        mask_secret(value)


def _outcome_unknown(exc: RayOrchClusterError) -> bool:
    """A submit that may have reached Ray: no answer (transient), an HTTP 5xx, or
    Ray's HTTP 400 "already exists" for this submission id."""
    status = exc.status
    if status is None:
        return exc.transient
    return status >= 500 or (status == 400 and "already exists" in str(exc))


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
