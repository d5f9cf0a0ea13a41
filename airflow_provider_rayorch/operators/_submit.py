"""The operator's submit: one Ray job per run and try, submitted idempotently.

The submission id is derived from the run id and try number, so a submit is safe to
repeat: after no answer or a 5xx the hook asks whether Ray has the job, and a retry
submits again only when it has not. An active job of the same run is
attached to instead. A submitted job is recorded in the run store's job-state record
(``RUNNING``); a submit that failed there (``NOT_STARTED``) and in the run-state
record (the job never started its driver, :mod:`..runs.run_state`).
"""

from __future__ import annotations

import shlex
import time
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.common.liveness import record_submitted
from airflow_provider_rayorch.common.run_ids import submission_id
from airflow_provider_rayorch.common.states import (
    JOB_ID_KEY,
    JOB_URL_KEY,
    LOCAL_HEAD_KEY,
    JobStatus,
)
from airflow_provider_rayorch.exceptions import RayOrchClusterError
from airflow_provider_rayorch.lineage.parent import with_parent_run
from airflow_provider_rayorch.operators._embedded import DRIVER_MODULE

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["JobSubmitting"]


class JobSubmitting:
    """Mixed into the operator and the submit operator: needs ``hook``, ``_store``,
    ``_run_id``, ``_driver_args``, ``runtime_env``, ``entrypoint_num_cpus``,
    ``poll_interval`` and ``log``."""

    hook: Any
    log: Any
    poll_interval: float
    runtime_env: dict[str, Any]
    entrypoint_num_cpus: float | None
    _driver_args: list[str]
    _job_id: str | None
    _store: Any
    _run_id: Any

    def submit_job(self, context: Context) -> str:
        run_id = self._run_id(context)
        try:
            job_id = self._submit(context, run_id)
        except RayOrchClusterError as exc:  # the job never started: say so in the run store
            self._record_job_state(run_id, JobStatus.NOT_STARTED, f"submit failed: {exc}")
            raise
        record_submitted(self._store(), run_id, job_id, log=self.log)
        return job_id

    def _record_job_state(self, run_id: str, status: JobStatus, message: str) -> None:
        """Record ``status`` (a job that never started) and why; never raises."""
        from airflow_provider_rayorch.runs.run_state import record_not_started

        try:
            self._store().write_job_state(run_id, status.value, message)
            record_not_started(self._store(), run_id, message)
        except Exception as exc:  # the record helps the UI; it must not hide the real error
            self.log.warning("could not record job state %s of run %s: %s", status, run_id, exc)

    def _submit(self, context: Context, run_id: str) -> str:
        hook = self.hook
        active = hook.find_active_job(run_id)
        if active is not None:
            self.log.info("Run %s already has an active job %s: attaching to it", run_id, active)
            self._job_id = active
            return active
        sid = submission_id(run_id, context["ti"].try_number)
        info = hook.get_job_info(sid)
        if info is not None:
            if JobStatus.parse(info["status"]).is_active:
                return sid
            sid = f"{sid}-{int(time.time())}"  # Ray refuses to reuse a submission id
        store = self._store()
        entrypoint = shlex.join(
            ["python", "-m", DRIVER_MODULE, "--run-store", store.uri, "--run-id", run_id]
        )
        if self._driver_args:
            extra = [*self._driver_args, "--job-id", sid]
            entrypoint += " " + " ".join(shlex.quote(a) for a in extra)
        ti = context["ti"]
        metadata = {
            "rayorch_run_id": run_id,
            "airflow_dag_id": str(ti.dag_id),
            "airflow_task_id": str(ti.task_id),
            "airflow_run_id": str(ti.run_id),
            "airflow_map_index": str(getattr(ti, "map_index", -1)),
        }
        # Idempotent by ``sid``: after no answer or a 5xx the hook asks whether Ray has
        # the job, and submits again (within its retry budget) only when it has not.
        job_id = hook.submit_job(
            entrypoint,
            submission_id=sid,
            runtime_env=with_parent_run(self.runtime_env, ti),  # OpenLineage parent
            metadata=metadata,
            entrypoint_num_cpus=self.entrypoint_num_cpus,
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
