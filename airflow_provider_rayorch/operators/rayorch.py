"""RayOrchOperator: compile a RayOrch pipeline, run it on Ray, return its lineage summary.

Composed along its responsibilities: the run task's parameters and plan
(:mod:`._run_task`, shared with the submit operator), the idempotent submit
(:mod:`._submit`), the wait with its log relay and job error (:mod:`._job_wait`, on
the one job watch), the embedded driver process (:mod:`._embedded`); this module
adds the flow (resume, repair, defer), the failed-ratio verdict and asset events.
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import ResumableJobMixin

from airflow_provider_rayorch.common.ratio import judge_summary
from airflow_provider_rayorch.common.repair import RepairMode, should_repair
from airflow_provider_rayorch.common.states import (
    JOB_ID_KEY,
    SUMMARY_KEY,
    JobStatus,
    with_job_status,
)
from airflow_provider_rayorch.exceptions import RayOrchFailedRatioExceeded, RayOrchJobFailed
from airflow_provider_rayorch.operators._embedded import (
    DRIVER_MODULE,
    EMBEDDED_RAY_START_RETRIES,
    EmbeddedDriver,
)
from airflow_provider_rayorch.operators._job_wait import JobWaiting, execution_timeout_hint
from airflow_provider_rayorch.operators._run_task import RunTask
from airflow_provider_rayorch.operators._submit import JobSubmitting
from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.run_state import recorded_job_status
from airflow_provider_rayorch.triggers.rayorch import RayOrchJobTrigger

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Mapping

    from airflow.sdk import Context

    from airflow_provider_rayorch.runs.store import PlanRecord

__all__ = ["RayOrchOperator"]


class RayOrchOperator(JobSubmitting, JobWaiting, ResumableJobMixin, RunTask):
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

    external_id_key = JOB_ID_KEY

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
            summary = store.run_manifest_record(run_id)
        except Exception as exc:  # resuming instead would silently skip the asked repair
            raise StoreError(
                f"this try should repair run {run_id} (repair={self.repair!r}), but its run "
                f"manifest in {store.run_uri(run_id)} cannot be read: {exc}. Fix the run "
                "store (or the connection's run_store_options), then clear the task again"
            ) from exc
        if summary is None:
            return False
        bad = 0 if summary.sources is None else summary.sources.failed + summary.sources.suppressed
        if bad:
            self.log.info(
                "Try %s follows a manual clear (repair=%r): repairing %d failed or suppressed "
                "source(s) of run %s; PRESENT outputs are kept",
                getattr(ti, "try_number", "?"),
                self.repair,
                bad,
                summary.run_id,
            )
        return bool(bad)

    def _run_embedded(self, plan: PlanRecord) -> None:
        """Run the driver as a child process with a local Ray (operators/_embedded.py)."""
        self._embedded.driver_module = DRIVER_MODULE
        self._embedded.run(
            self._store().uri,
            plan.run_id,
            self._driver_args,
            self._driver_env(),
            retries=EMBEDDED_RAY_START_RETRIES,
        )

    @cached_property
    def _embedded(self) -> EmbeddedDriver:
        return EmbeddedDriver(log=self.log)

    @property
    def _proc(self) -> subprocess.Popen[str] | None:
        """The embedded driver's process while it runs."""
        return self._embedded.proc

    @_proc.setter
    def _proc(self, proc: subprocess.Popen[str] | None) -> None:
        self._embedded.proc = proc

    # -- ResumableJobMixin -------------------------------------------------------------
    def get_job_status(self, external_id: Any, context: Context) -> str:
        # the mixin declares it abstract and comes first in the MRO: name the run task's
        return RunTask.get_job_status(self, external_id, context)

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

    def get_job_result(self, external_id: Any, context: Context) -> Any:
        if self._result is not None:
            return self._result
        run_id = self._run_id(context)
        summary = self._store().run_manifest_record(run_id)
        if summary is None:
            message = f"job {external_id} ended without a run manifest for run {run_id}"
            self._record_job_state(run_id, JobStatus.FAILED, message)
            raise RayOrchJobFailed(message)
        status = recorded_job_status(self._store(), run_id)
        self._result = self.finish(with_job_status(plain(summary), status), context)
        return self._result

    def execute_complete(self, context: Context, event: Mapping[str, Any] | None = None) -> Any:
        if not event or "status" not in event:
            raise RayOrchJobFailed(f"unexpected trigger event {event!r}")
        self._job_id = str(event.get("job_id") or "") or None
        if event["status"] != "success":
            raise self._deferred_job_error(event, context)
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
        from airflow_provider_rayorch.lineage.assets import attach_outputs_event

        attach_outputs_event(context, self.outputs_asset_alias, summary, self._store(), self.log)

    # -- kill ----------------------------------------------------------------------------
    def on_kill(self) -> None:
        """Stop the embedded driver's process group, or the Ray job (never delete it).

        Airflow's task runner calls this while handling the ``AirflowTaskTimeout`` of
        the task's ``execution_timeout``: then the log also says what bounds a hang."""
        import sys

        from airflow.sdk.exceptions import AirflowTaskTimeout

        self._embedded.kill()
        super().on_kill()
        if isinstance(sys.exc_info()[1], AirflowTaskTimeout):
            self.log.warning(
                "%s",
                execution_timeout_hint(
                    self.execution_timeout,
                    self._prepared_run_id,
                    self._job_id,
                    self._untimed_modules,
                ),
            )
