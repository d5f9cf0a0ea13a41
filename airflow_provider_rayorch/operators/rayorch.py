"""RayOrchOperator: compile a RayOrch pipeline, run it on Ray, return its lineage summary."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import AssetAlias, BaseOperator, ResumableJobMixin
from airflow.sdk.configuration import conf

from airflow_provider_rayorch.common.liveness import record_running
from airflow_provider_rayorch.common.polling import call_with_retries
from airflow_provider_rayorch.common.progress import relay_line
from airflow_provider_rayorch.common.ratio import judge_summary
from airflow_provider_rayorch.common.repair import RepairMode, should_repair
from airflow_provider_rayorch.common.states import (
    CONN_ID_KEY,
    JOB_ID_KEY,
    JOB_URL_KEY,
    LOCAL_HEAD_KEY,
    RUN_ID_KEY,
    RUN_STORE_KEY,
    SUMMARY_KEY,
    JobStatus,
)
from airflow_provider_rayorch.exceptions import (
    RayOrchClusterError,
    RayOrchCompileFailed,
    RayOrchFailedRatioExceeded,
    RayOrchJobFailed,
    RayOrchPipelineNotImportable,
    RayOrchPlanChanged,
)
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook, mask_secrets
from airflow_provider_rayorch.lineage.parent import with_parent_run
from airflow_provider_rayorch.links.rayorch import RayJobLink
from airflow_provider_rayorch.links.report import RayOrchReportLink
from airflow_provider_rayorch.operators import _common
from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs.secrets import driver_env, ray_init_secrets
from airflow_provider_rayorch.triggers.rayorch import RayOrchJobTrigger

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow.sdk import Context

    from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

__all__ = ["JOB_ID_KEY", "RUN_ID_KEY", "RUN_STORE_KEY", "SUMMARY_KEY", "RayOrchOperator"]

DRIVER_MODULE = "airflow_provider_rayorch.job"
#: ``ray.init`` waits a fixed 30 s for its raylet (ray/_private/node.py, not
#: configurable), then fails with this; on a loaded machine the embedded driver is
#: started again, in a fresh process group, at most this many times.
RAY_START_TIMED_OUT = "The current node timed out during startup"
EMBEDDED_RAY_START_RETRIES = 2


def embedded_ray_env(base: Mapping[str, str], token_dir: str) -> dict[str, str]:
    """The embedded driver's environment: its private local Ray runs in token mode with
    a token file of its own in ``token_dir``, so Ray never reads or writes ``~/.ray``
    whatever this machine's Ray token state or ``RAY_AUTH_*`` variables."""
    import secrets

    env = {k: v for k, v in base.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_TOKEN")}
    path = os.path.join(token_dir, "auth_token")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))
    env["RAY_AUTH_MODE"] = "token"
    env["RAY_AUTH_TOKEN_PATH"] = path
    return env


def _driver_exit_error(code: int, message: str) -> Exception:
    from airflow_provider_rayorch.runs import driver

    if code == driver.EXIT_IMPORT:
        return RayOrchPipelineNotImportable(message)
    if code == driver.EXIT_COMPILE:
        return RayOrchCompileFailed(message)
    if code == driver.EXIT_PLAN_CHANGED:
        return RayOrchPlanChanged(message)
    return RayOrchJobFailed(message)


def _prctl() -> Any:
    """libc's prctl, loaded in the parent (a preexec_fn must not import anything)."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def _die_with_parent_fn() -> Any:
    """A preexec_fn giving the embedded driver SIGTERM when the task process dies, so
    an orphaned driver never races a retry's driver on the same run (Linux only)."""
    prctl = _prctl()
    if prctl is None:
        return None
    pr_set_pdeathsig, sigterm = 1, int(signal.SIGTERM)

    def preexec() -> None:
        prctl(pr_set_pdeathsig, sigterm)

    return preexec


def _error_line(text: str) -> dict[str, Any] | None:
    for line in reversed(text.splitlines()):
        _, marker, payload = line.partition("RAYORCH_ERROR ")
        if marker:
            try:
                return dict(json.loads(payload))
            except ValueError:
                return {"message": payload}
    return None


class RayOrchOperator(ResumableJobMixin, BaseOperator):
    """Run a RayOrch pipeline over ``sources`` and return the run's lineage summary.

    The pipeline is imported and compiled in the worker first: a ``CompileError``
    fails the task at once and nothing is submitted. The plan is written to the run
    store under a run id derived from dag, run, task and map index; the Ray job runs
    the driver against it. A retried task re-attaches to its job while that runs
    (the job id is kept in the task state store) and otherwise submits a new job for
    the same run id, which skips every committed microbatch.

    :param pipeline: ``"pkg.module:Factory"`` (or the class) building a ``ro.Pipeline``.
    :param pipeline_kwargs: keyword arguments of the factory (JSON values; templated).
    :param sources: a list of source rows (JSON values), a glob URI such as
        ``s3://bucket/in/{{ ds }}/*.pdf`` expanded through ``pyarrow.fs``, or, when
        ``forward`` takes several Ports, a mapping of equally long columns in
        ``forward``'s order (templated).
    :param sources_modified_after: with a glob, keep files modified at or after this
        (ISO string or datetime; templated, e.g. ``{{ data_interval_start }}``).
    :param sources_modified_before: with a glob, keep files modified before this.
    :param input_batch_size: sources per microbatch (``None``: one microbatch).
    :param max_active_input_batches: microbatches admitted at once.
    :param rayorch_conn_id: a ``rayorch`` connection; none defined means embedded Ray.
    :param max_failed_ratio: fail when (FAILED + SUPPRESSED) / total exceeds this.
    :param deferrable: wait in the triggerer instead of a worker slot (cluster only).
    :param runtime_env: merged over the connection's ``runtime_env``.
    :param run_store: overrides the connection's ``run_store`` URI.
    :param ray_address: overrides the connection's host (e.g. a loopback head's).
    :param backend: ``"ray"`` (default) or ``"local"`` (the engine's reference executor).
    :param on_plan_change: ``"fail"`` (default) or ``"replace"`` when the run store
        already holds a different plan for this run id.
    :param outputs_asset_alias: name of an ``AssetAlias`` outlet that receives the
        run's output directory as an Asset event.
    :param poll_interval: seconds between job status polls.
    :param repair: ``"on_clear"`` (default): the first try after a manual clear of a
        run whose run manifest has FAILED or SUPPRESSED sources re-runs only those
        sources (see docs/airflow/repair.md); automatic retries resume. ``"always"``:
        every try repairs; ``False``: never.
    """

    template_fields: Sequence[str] = (
        "pipeline_kwargs",
        "sources",
        "sources_modified_after",
        "sources_modified_before",
        "runtime_env",
        "run_store",
        "ray_address",
    )
    template_fields_renderers = {
        "pipeline_kwargs": "json",
        "sources": "json",
        "runtime_env": "json",
    }
    operator_extra_links = (RayJobLink(), RayOrchReportLink())
    ui_color = "#cfe8fc"
    external_id_key = JOB_ID_KEY

    def __init__(
        self,
        *,
        pipeline: Any,
        sources: Any,
        pipeline_kwargs: Mapping[str, Any] | None = None,
        sources_modified_after: Any = None,
        sources_modified_before: Any = None,
        input_batch_size: int | None = None,
        max_active_input_batches: int = 1,
        rayorch_conn_id: str = RayOrchHook.default_conn_name,
        max_failed_ratio: float = 0.0,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        runtime_env: Mapping[str, Any] | None = None,
        run_store: str | None = None,
        ray_address: str | None = None,
        backend: str = "ray",
        on_plan_change: str = "fail",
        outputs_asset_alias: str | None = None,
        poll_interval: float = 5.0,
        entrypoint_num_cpus: float | None = None,
        repair: Any = RepairMode.ON_CLEAR,
        **kwargs: Any,
    ) -> None:
        if outputs_asset_alias:
            outlets = list(kwargs.pop("outlets", None) or [])
            outlets.append(AssetAlias(outputs_asset_alias))
            kwargs["outlets"] = outlets
        super().__init__(**kwargs)
        if not 0.0 <= float(max_failed_ratio) <= 1.0:
            raise ValueError(f"max_failed_ratio must be within [0, 1], got {max_failed_ratio}")
        if input_batch_size is not None and int(input_batch_size) < 1:
            raise ValueError(f"input_batch_size must be >= 1, got {input_batch_size}")
        if backend not in ("ray", "local"):
            raise ValueError(f"backend must be 'ray' or 'local', got {backend!r}")
        if on_plan_change not in ("fail", "replace"):
            raise ValueError(f"on_plan_change must be 'fail' or 'replace', got {on_plan_change!r}")
        self.pipeline = _common.pipeline_spec(pipeline)
        self.pipeline_kwargs = dict(pipeline_kwargs or {})
        self.sources = sources
        self.sources_modified_after = sources_modified_after
        self.sources_modified_before = sources_modified_before
        self.input_batch_size = input_batch_size
        self.max_active_input_batches = int(max_active_input_batches)
        self.rayorch_conn_id = rayorch_conn_id
        self.max_failed_ratio = float(max_failed_ratio)
        self.deferrable = deferrable
        self.runtime_env = dict(runtime_env or {})
        _common.check_run_store_setting(run_store)
        self.run_store = run_store
        self.ray_address = ray_address
        self.backend = backend
        self.on_plan_change = on_plan_change
        self.outputs_asset_alias = outputs_asset_alias
        self.poll_interval = float(poll_interval)
        self.entrypoint_num_cpus = entrypoint_num_cpus
        self.repair = RepairMode.parse(repair).value
        self._repairing = False
        #: extra driver arguments of this try (a repair's ``--repair all ...``)
        self._driver_args: list[str] = []
        self._proc: subprocess.Popen[str] | None = None
        self._job_id: str | None = None
        self._result: dict[str, Any] | None = None

    # -- plumbing ---------------------------------------------------------------------
    @cached_property
    def hook(self) -> RayOrchHook:
        """Submits: a Jobs API that never answered fails at once."""
        return RayOrchHook(self.rayorch_conn_id, address=self.ray_address)

    @cached_property
    def poll_hook(self) -> RayOrchHook:
        """Polls a job already submitted (by this try or an earlier one): a refused first
        request is transient (a dashboard restarting), retried within the budget."""
        return RayOrchHook(self.rayorch_conn_id, address=self.ray_address, answered_before=True)

    def _store(self) -> RunStore:
        from airflow_provider_rayorch.runs.store import RunStore

        # the connection's run_store_options (endpoint, region, keys) open any store URI
        settings = self.hook.settings
        return RunStore(self.run_store or self.hook.run_store_uri, settings.run_store_options)

    def _run_id(self, context: Context) -> str:
        return _common.run_id_from_context(context)

    def _ray_init_kwargs(self) -> dict[str, Any]:
        """Options for an embedded Ray (the connection's, plus runtime_env/namespace).

        They hold secrets (``runtime_env.env_vars``, ``_redis_password``): masked here,
        handed to the driver by environment (:meth:`_driver_env`), never stored."""
        if not self.hook.embedded:
            return {}
        # No dashboard by default: nobody browses an embedded Ray, and it costs a slow start.
        kwargs = {"include_dashboard": False, **self.hook.settings.ray_init_kwargs}
        env = self.hook.runtime_env(self.runtime_env)
        if env:
            kwargs["runtime_env"] = env
        if self.hook.settings.namespace:
            kwargs.setdefault("namespace", self.hook.settings.namespace)
        mask_secrets(ray_init_secrets(kwargs))
        return kwargs

    def _driver_env(self) -> dict[str, str]:
        """The embedded driver's run-store and ``ray.init()`` options, by environment."""
        return driver_env(self.hook.settings.run_store_options, self._ray_init_kwargs())

    def prepare(self, context: Context) -> PlanRecord:
        """Compile here, then write (or reuse) the plan record; nothing is submitted yet."""
        remote = not self.hook.embedded
        env = self.hook.runtime_env(self.runtime_env)
        mask_secrets(ray_init_secrets(None, env))  # the operator's env_vars too
        compiled = _common.compile_plan(
            self.pipeline,
            self.pipeline_kwargs,
            remote=remote,
            runtime_env=env,
            shares_worker_path=self.hook.is_local_head is True,
        )
        sources, n_columns = _common.resolve_sources(
            self.sources,
            modified_after=self.sources_modified_after,
            modified_before=self.sources_modified_before,
        )
        store = self._store()
        run_id = self._run_id(context)
        plan = _common.prepare_plan(
            store=store,
            run_id=run_id,
            spec=self.pipeline,
            pipeline_kwargs=self.pipeline_kwargs,
            fingerprint=str(compiled.fingerprint),
            sources=sources,
            input_batch_size=self.input_batch_size,
            max_active_input_batches=self.max_active_input_batches,
            max_failed_ratio=self.max_failed_ratio,
            backend=self.backend,
            on_plan_change=self.on_plan_change,
            n_columns=n_columns,
            compiled=compiled,
            repair=self._repairing,
        )
        ti = context["ti"]
        ti.xcom_push(key=RUN_ID_KEY, value=run_id)
        ti.xcom_push(key=RUN_STORE_KEY, value=store.uri)
        ti.xcom_push(key=CONN_ID_KEY, value=self.rayorch_conn_id)  # its run_store_options
        self.log.info(
            "Run %s: %d sources in %d microbatch(es), plan %s, run store %s",
            run_id,
            len(plan.sources),
            len(plan.microbatches()),
            plan.fingerprint[:12],
            store.run_uri(run_id),
        )
        return plan

    # -- execute ---------------------------------------------------------------------
    def execute(self, context: Context) -> Any:
        self._repairing = self._wants_repair(context)
        plan = self.prepare(context)
        if self._repairing:
            self._driver_args = ["--repair", "all", "--write-run-manifest"]
        if self.hook.embedded:
            if self.deferrable:
                self.log.info("Embedded Ray runs in the worker: deferrable has no effect")
            self._run_embedded(plan)
            return self.get_job_result(None, context)
        if self._repairing:
            # not execute_resumable: it would return the cleared try's succeeded job
            job_id = self.submit_job(context)
            state = context.get("task_state_store")
            if state is not None:
                from airflow.sdk.execution_time.context import NEVER_EXPIRE

                state.set(JOB_ID_KEY, job_id, retention=NEVER_EXPIRE)
            return self.poll_until_complete(job_id, context)
        return self.execute_resumable(context)

    def _wants_repair(self, context: Context) -> bool:
        """This try repairs: the rule says so and the finished run has failed sources."""
        ti = context["ti"]
        if not should_repair(RepairMode(self.repair), ti, self.retries):
            return False
        store, run_id = self._store(), self._run_id(context)
        try:  # no store or no manifest yet reads as None: nothing to repair
            summary = store.read_run_manifest(run_id)
        except Exception as exc:  # resuming instead would silently skip the asked repair
            raise StoreError(
                f"this try should repair run {run_id} (repair={self.repair!r}), but its run "
                f"manifest in {store.run_uri(run_id)} cannot be read: {exc}. Fix the run "
                "store (or the connection's run_store_options), then clear the task again"
            ) from exc
        if summary is None:
            return False
        sources = summary.get("sources") or {}
        bad = int(sources.get("failed", 0)) + int(sources.get("suppressed", 0))
        if bad:
            self.log.info(
                "Try %s follows a manual clear (repair=%r): repairing %d failed or suppressed "
                "source(s) of run %s; PRESENT outputs are kept",
                getattr(ti, "try_number", "?"),
                self.repair,
                bad,
                summary.get("run_id"),
            )
        return bool(bad)

    def _run_embedded(self, plan: PlanRecord) -> None:
        """Run the driver as a child process (its own process group) with a local Ray;
        start it again when its local Ray timed out starting (a busy machine)."""
        for attempt in range(EMBEDDED_RAY_START_RETRIES + 1):
            token_dir = tempfile.mkdtemp(prefix="rayorch-driver-")  # mode 0700
            try:
                env = {**embedded_ray_env(os.environ, token_dir), **self._driver_env()}
                self._run_driver_process(plan, env)
                return
            except RayOrchJobFailed as exc:
                if RAY_START_TIMED_OUT not in str(exc) or attempt == EMBEDDED_RAY_START_RETRIES:
                    raise
                self.log.warning(
                    "The embedded local Ray did not start in time (a busy machine): starting "
                    "the driver again (%d/%d)",
                    attempt + 1,
                    EMBEDDED_RAY_START_RETRIES,
                )
            finally:
                shutil.rmtree(token_dir, ignore_errors=True)

    def _run_driver_process(self, plan: PlanRecord, env: dict[str, str]) -> None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        store = self._store()
        cmd = [
            sys.executable,
            "-m",
            DRIVER_MODULE,
            "--run-store",
            store.uri,
            "--run-id",
            plan.run_id,
            *self._driver_args,
        ]
        self.log.info("Starting the embedded driver: %s", " ".join(cmd))
        self._proc = subprocess.Popen(
            cmd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=_die_with_parent_fn(),
        )
        tail: deque[str] = deque(maxlen=200)
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            tail.append(line.rstrip("\n"))
            relay_line(self.log, "[driver]", tail[-1])
        code = self._proc.wait()
        self._proc = None
        if code != 0:
            error = _error_line("\n".join(tail)) or {}
            message = error.get("message") or "\n".join(list(tail)[-20:])
            raise _driver_exit_error(code, f"driver exited with code {code}: {message}")

    # -- ResumableJobMixin -------------------------------------------------------------
    def _retrying(self, fn: Any, what: str) -> Any:
        """``fn()`` with transient Jobs-API errors retried within the one budget."""
        return call_with_retries(fn, what=what, interval=self.poll_interval, log=self.log)

    def submit_job(self, context: Context) -> str:
        run_id = self._run_id(context)
        try:
            job_id = self._submit(context, run_id)
        except RayOrchClusterError as exc:  # the job never started: say so in the run store
            self._record_job_state(run_id, JobStatus.NOT_STARTED, f"submit failed: {exc}")
            raise
        record_running(self._store(), run_id, job_id, log=self.log, force=True)
        return job_id

    def _record_job_state(self, run_id: str, status: JobStatus, message: str) -> None:
        try:
            self._store().write_job_state(run_id, status.value, message)
        except Exception as exc:  # the record helps the UI; it must not hide the real error
            self.log.warning("could not record job state %s of run %s: %s", status, run_id, exc)

    def _submit(self, context: Context, run_id: str) -> str:
        hook = self.hook
        active = self._retrying(lambda: hook.find_active_job(run_id), "listing Ray jobs")
        if active is not None:
            self.log.info("Run %s already has an active job %s: attaching to it", run_id, active)
            self._job_id = active
            return active
        sid = _common.submission_id(run_id, context["ti"].try_number)
        info = self._retrying(lambda: hook.get_job_info(sid), f"reading job {sid}")
        if info is not None:
            if JobStatus.parse(info["status"]).is_active:
                return sid
            sid = f"{sid}-{int(time.time())}"  # Ray refuses to reuse a submission id
        store = self._store()
        entrypoint = (
            f"python -m {DRIVER_MODULE} --run-store {_quote(store.uri)} --run-id {_quote(run_id)}"
        )
        if self._driver_args:
            extra = [*self._driver_args, "--job-id", sid]
            entrypoint += " " + " ".join(_quote(a) for a in extra)
        ti = context["ti"]
        metadata = {
            "rayorch_run_id": run_id,
            "airflow_dag_id": str(ti.dag_id),
            "airflow_task_id": str(ti.task_id),
            "airflow_run_id": str(ti.run_id),
            "airflow_map_index": str(getattr(ti, "map_index", -1)),
        }
        # Idempotent by ``sid``: after no answer or a 5xx the hook asks whether Ray has
        # the job, and a retry submits again only when it has not (issue 19).
        job_id = self._retrying(
            lambda: hook.submit_job(
                entrypoint,
                submission_id=sid,
                runtime_env=with_parent_run(self.runtime_env, ti),  # OpenLineage parent
                metadata=metadata,
                entrypoint_num_cpus=self.entrypoint_num_cpus,
            ),
            f"submitting job {sid}",
        )
        where = "the provider's loopback head" if hook.is_local_head is True else "the cluster"
        self.log.info("Submitted Ray job %s for run %s to %s", job_id, run_id, where)
        self._job_id = job_id
        return job_id

    def _push_job(self, context: Context, job_id: str) -> None:
        ti = context["ti"]
        ti.xcom_push(key=JOB_ID_KEY, value=job_id)
        url = self.hook.dashboard_job_url(job_id)
        if url:
            ti.xcom_push(key=JOB_URL_KEY, value=url)
            if self.hook.is_local_head is True:
                ti.xcom_push(key=LOCAL_HEAD_KEY, value=True)
                self.log.info("Ray dashboard (until the head's teardown): %s", url)
            else:
                self.log.info("Ray dashboard: %s", url)

    def get_job_status(self, external_id: Any, context: Context) -> str:
        self._job_id = job_id = str(external_id)
        status = self._retrying(
            lambda: self.poll_hook.get_job_status(job_id), f"reading job {job_id}"
        )
        if JobStatus.parse(status) is JobStatus.RUNNING:
            record_running(self._store(), self._run_id(context), job_id, log=self.log)
        return str(status)

    def is_job_active(self, status: str) -> bool:
        return JobStatus.parse(status).is_active

    def is_job_succeeded(self, status: str) -> bool:
        return JobStatus.parse(status) is JobStatus.SUCCEEDED

    def poll_until_complete(self, external_id: Any, context: Context) -> Any:
        """Wait for the job (or defer); returns the result, since the mixin returns
        this method's value when it re-attaches to a running job."""
        job_id = str(external_id)
        self._job_id = job_id
        self._push_job(context, job_id)
        if self.deferrable:
            self.defer(
                trigger=RayOrchJobTrigger(
                    job_id=job_id,
                    run_id=self._run_id(context),
                    run_store=self._store().uri,
                    rayorch_conn_id=self.rayorch_conn_id,
                    address=self.ray_address,
                    poll_interval=self.poll_interval,
                ),
                method_name="execute_complete",
            )
        self._poll(job_id, context)
        return self.get_job_result(job_id, context)

    def _poll(self, job_id: str, context: Context) -> None:
        store, run_id = self._store(), self._run_id(context)
        printed, seen = 0, -1
        while True:
            info = self._retrying(
                lambda: self.poll_hook.get_job_info(job_id), f"polling job {job_id}"
            )
            status = JobStatus.MISSING if info is None else JobStatus.parse(info["status"])
            if status is JobStatus.RUNNING:
                record_running(store, run_id, job_id, log=self.log)
            committed = len(store.committed(run_id))
            if committed != seen:
                seen = committed
                self.log.info("Job %s %s: %d microbatch(es) committed", job_id, status, committed)
            try:
                logs, logs_read = self.poll_hook.get_job_logs(job_id), True
            except (RayOrchClusterError, ValueError) as exc:  # the relay is best effort
                self.log.debug("reading the log of job %s failed: %s", job_id, exc)
                logs, logs_read = "", False
            for line in logs.splitlines()[printed:]:
                relay_line(self.log, "[ray job]", line)
            printed = max(printed, len(logs.splitlines()))
            if not status.is_active:
                break
            time.sleep(self.poll_interval)
        if status is not JobStatus.SUCCEEDED:
            message = "" if info is None else str(info.get("message") or "")
            if info is None:
                message = f"the cluster does not know job {job_id}"
            if not logs_read:
                logs = self._last_log(job_id)
            raise self._job_error(
                job_id, status, message, logs, run_id=run_id, exit_code=_exit_code(info)
            )

    def _last_log(self, job_id: str) -> str:
        """The log of a job that failed, read with retries: its ``RAYORCH_ERROR`` line
        tells a compile or import error (no task retry) from a failed run. Unreadable:
        ``""``, and the verdict comes from Ray's job info (exit code, log tail)."""
        try:
            return str(
                self._retrying(
                    lambda: self.poll_hook.get_job_logs(job_id), f"reading the log of job {job_id}"
                )
            )
        except (RayOrchClusterError, ValueError) as exc:  # ValueError: not JSON
            self.log.warning(
                "cannot read the log of job %s (%s): judging it by Ray's job info", job_id, exc
            )
            return ""

    def _job_error(
        self,
        job_id: str,
        status: str,
        message: str,
        logs: str,
        *,
        run_id: str | None = None,
        exit_code: int | None = None,
    ) -> Exception:
        """The task's error for a job that ended without success: the driver's
        ``RAYORCH_ERROR`` line (in the log, or in the log tail Ray keeps in ``message``),
        else the driver's exit code from Ray's job info, else ``RayOrchJobFailed``."""
        ended = _ended_status(status)
        if (
            ended is not None
            and run_id is not None
            and self._store().read_run_manifest(run_id) is None
        ):
            self._record_job_state(run_id, ended, f"Ray job {job_id} ended {status}: {message}")
        error = _error_line(logs) or _error_line(message)
        if error is not None and "exit_code" in error:
            return _driver_exit_error(int(error["exit_code"]), str(error.get("message")))
        if exit_code:  # a driver that died before its error line (or a lost log)
            return _driver_exit_error(exit_code, f"Ray job {job_id} ended {status}: {message}")
        if "No module named 'airflow_provider_rayorch'" in f"{message}\n{logs}":
            return RayOrchPipelineNotImportable(
                f"Ray job {job_id}: the cluster's Python cannot import airflow_provider_rayorch; "
                "install airflow-provider-rayorch in the cluster image (or add it to the "
                "connection's runtime_env `pip`)."
            )
        return RayOrchJobFailed(f"Ray job {job_id} ended {status}: {message}")

    def get_job_result(self, external_id: Any, context: Context) -> Any:
        if self._result is not None:
            return self._result
        run_id = self._run_id(context)
        summary = self._store().read_run_manifest(run_id)
        if summary is None:
            message = f"job {external_id} ended without a run manifest for run {run_id}"
            self._record_job_state(run_id, JobStatus.FAILED, message)
            raise RayOrchJobFailed(message)
        summary = {**summary, "job_status": JobStatus.SUCCEEDED.value}
        self._result = self.finish(summary, context)
        return self._result

    def execute_complete(self, context: Context, event: Mapping[str, Any] | None = None) -> Any:
        if not event or "status" not in event:
            raise RayOrchJobFailed(f"unexpected trigger event {event!r}")
        self._job_id = str(event.get("job_id") or "") or None
        if event["status"] != "success":
            job_id = str(event.get("job_id"))
            try:  # the exit code is in the job info only
                info = self._retrying(
                    lambda: self.poll_hook.get_job_info(job_id), f"reading job {job_id}"
                )
            except RayOrchClusterError as exc:
                self.log.warning("cannot read job %s (%s)", job_id, exc)
                info = None
            raise self._job_error(
                job_id,
                str(event.get("job_status")),
                str(event.get("message")),
                self._last_log(job_id),
                run_id=self._run_id(context),
                exit_code=_exit_code(info),
            )
        return self.get_job_result(event.get("job_id"), context)

    # -- result ----------------------------------------------------------------------
    def finish(self, summary: dict[str, Any], context: Context) -> dict[str, Any]:
        """Check the failed ratio, emit asset events, and return the summary."""
        verdict = judge_summary(summary, self.max_failed_ratio)
        summary = verdict.summary
        self._asset_events(summary, context)
        sources = summary["sources"]
        self.log.info(
            "Run %s %s: %d sources, %d present, %d dropped, %d failed, %d suppressed",
            summary.get("run_id"),
            summary["state"],
            sources["total"],
            sources["present"],
            sources["dropped"],
            sources["failed"],
            sources["suppressed"],
        )
        self.log.info("Lineage summary:\n%s", json.dumps(summary, indent=2))
        if verdict.message is not None:
            context["ti"].xcom_push(key=SUMMARY_KEY, value=summary)
            raise RayOrchFailedRatioExceeded(verdict.message)
        return summary

    def _asset_events(self, summary: Mapping[str, Any], context: Context) -> None:
        """The run's outputs folder as an Asset event on the alias, named as OpenLineage
        names the output dataset, with the lineage summary (lineage/assets.py)."""
        if not self.outputs_asset_alias:
            return
        from airflow.sdk import Asset

        from airflow_provider_rayorch.lineage.assets import outputs_asset_event

        try:
            plan = self._store().read_plan(str(summary.get("run_id")))
        except Exception as exc:  # the event still names the outputs, without inputs
            self.log.warning("could not read the plan record for the asset event: %s", exc)
            plan = None
        event = outputs_asset_event(summary, plan)
        if event is None:
            return
        context["outlet_events"][AssetAlias(self.outputs_asset_alias)].add(
            Asset(uri=event.uri, name=event.name), extra=event.extra
        )

    # -- kill ----------------------------------------------------------------------------
    def on_kill(self) -> None:
        """Stop the embedded driver's process group, or the Ray job (never delete it)."""
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGTERM)
        if self._job_id:
            self.hook.stop_job(self._job_id)

    # -- OpenLineage (docs/airflow/lineage.md; imported only when its provider asks) -------
    def get_openlineage_facets_on_start(self) -> Any:
        """Inputs of a ``sources`` list (a glob is listed by the task, later)."""
        from airflow_provider_rayorch.lineage.tasks import operator_lineage_on_start

        return operator_lineage_on_start(self)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """Input locations, the run's outputs folder and the ``rayorch`` run facet."""
        from airflow_provider_rayorch.lineage.tasks import operator_lineage_on_end

        return operator_lineage_on_end(self, task_instance, failed=False)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        """As on complete, plus an ``errorMessage`` facet from the run's records."""
        from airflow_provider_rayorch.lineage.tasks import operator_lineage_on_end

        return operator_lineage_on_end(self, task_instance, failed=True)


def _exit_code(info: Mapping[str, Any] | None) -> int | None:
    """The driver's exit code from Ray's job info (``driver_exit_code``), if known."""
    code = (info or {}).get("driver_exit_code")
    try:
        return None if code is None else int(code)
    except (TypeError, ValueError):
        return None


def _ended_status(status: str) -> JobStatus | None:
    """What to record for a job that ended without a run manifest (None: its status is
    not known, for example after the retry budget ran out: record nothing)."""
    try:
        parsed = JobStatus.parse(status)
    except ValueError:
        return None
    if parsed.is_active:
        return None
    return JobStatus.FAILED if parsed is JobStatus.SUCCEEDED else parsed


def _quote(value: str) -> str:
    import shlex

    return shlex.quote(value)
