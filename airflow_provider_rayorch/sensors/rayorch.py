"""Sensors of the per-microbatch pattern: one per source microbatch, and one for the run."""

from __future__ import annotations

from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue

from airflow_provider_rayorch.common.job_end import job_end
from airflow_provider_rayorch.common.job_watch import JobObservation, JobWatch
from airflow_provider_rayorch.common.liveness import record_ended_without_manifest
from airflow_provider_rayorch.common.microbatch_story import log_microbatch, log_run
from airflow_provider_rayorch.common.polling import RetryPolicy
from airflow_provider_rayorch.common.ratio import judge_summary
from airflow_provider_rayorch.common.repair import RepairMode, ended_before_commit
from airflow_provider_rayorch.common.states import JobStatus, with_job_status
from airflow_provider_rayorch.exceptions import RayOrchFailedRatioExceeded, RayOrchJobFailed
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.lineage.assets import attach_outputs_event
from airflow_provider_rayorch.lineage.tasks import MicrobatchLineage, RunLineage
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.run_state import recorded_job_status
from airflow_provider_rayorch.sensors._assets import (
    end_from_trigger_with_alias,
    with_alias_outlet,
)
from airflow_provider_rayorch.sensors._repair import push_failed as _push_failed
from airflow_provider_rayorch.sensors._wait_mode import wait_mode
from airflow_provider_rayorch.triggers.rayorch import RayOrchJobTrigger, RayOrchMicrobatchTrigger

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow.sdk import Context

    from airflow_provider_rayorch.runs.records import MicrobatchManifest, RunManifest
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["MICROBATCH_MAP_INDEX_TEMPLATE", "RayOrchMicrobatchSensor", "RayOrchRunSensor"]

#: Default label of a mapped microbatch task: its source range.
MICROBATCH_MAP_INDEX_TEMPLATE = (
    "mb {{ task.microbatch['index'] }}: sources {{ task.microbatch['first_source'] }}"
    "-{{ task.microbatch['first_source'] + task.microbatch['count'] - 1 }}"
)


def judge(summary: Mapping[str, Any], max_failed_ratio: float, context: Context) -> dict[str, Any]:
    """Re-evaluate ``state`` against ``max_failed_ratio``; raise (after pushing it) if failed."""
    verdict = judge_summary(summary, max_failed_ratio)
    if verdict.message is not None:
        _push_failed(context, verdict.summary)
        raise RayOrchFailedRatioExceeded(verdict.message)
    return verdict.summary


def _real_job_id(job_id: str | None) -> str | None:
    """The job id, or None when the submit task pushed none (a missing XCom renders
    as ``"None"`` in a template)."""
    text = str(job_id or "").strip()
    return None if text in ("", "None") else text


class _RunStoreSensor(BaseSensorOperator):
    """What both sensors share: a run in a run store, its Ray job, the failure bar.

    :param end_from_trigger: deferred, the trigger judges the outcome and ends the task
        in the triggerer, with the XComs the worker would push: Airflow 3.3's scheduler
        can fail a try resumed seconds after it deferred (docs/airflow/operators.md).
        ``False`` resumes on a worker (``execute_complete``). ``None`` (default): end in
        the triggerer unless listeners are registered, since Airflow refuses
        ``end_from_trigger=True`` beside listeners (they would not see the task end).
    :param deferrable: wait in the triggerer. ``None`` (default): only when the trigger
        can end the task; otherwise wait on a worker, never resuming after a deferral
        (:mod:`._wait_mode` says why).
    """

    def __init__(
        self,
        *,
        run_id: str,
        run_store: str,
        job_id: str | None = None,
        rayorch_conn_id: str = RayOrchHook.default_conn_name,
        ray_address: str | None = None,
        max_failed_ratio: float = 0.0,
        deferrable: bool | None = None,
        end_from_trigger: bool | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("poke_interval", 5.0)
        super().__init__(**kwargs)
        self.run_id = run_id
        self.run_store = run_store
        self.job_id = job_id
        self.rayorch_conn_id = rayorch_conn_id
        self.ray_address = ray_address
        self.max_failed_ratio = float(max_failed_ratio)
        mode = wait_mode(deferrable, end_from_trigger)
        self.deferrable = mode.deferrable
        self.end_from_trigger = mode.end_from_trigger

    @cached_property
    def hook(self) -> RayOrchHook:
        """Polls the run's jobs and submits its repairs. The submit that started the run
        got an answer from this Jobs API, so a refused request is transient (a head
        restarting or busy), retried within the budget."""
        return RayOrchHook(
            self.rayorch_conn_id,
            address=self.ray_address,
            answered_before=True,
            retry=RetryPolicy(base_s=float(self.poke_interval)),
        )

    @cached_property
    def _store_hook(self) -> RayOrchHook:
        """Opens the run store with the connection's ``run_store_options``; it names the
        Jobs API the task uses (``ray_address``) when no connection exists."""
        return RayOrchHook(self.rayorch_conn_id, address=self.ray_address)

    @cached_property
    def _run_store(self) -> RunStore:
        """The run store, opened once per task (every poke reads through it) with the
        connection's ``run_store_options`` (endpoint, region, keys)."""
        return self._store_hook.run_store(self.run_store)

    def _store(self) -> RunStore:
        return self._run_store

    @property
    def first_job(self) -> str | None:
        """The job the submit task started (XCom ``rayorch_job_id``), if any."""
        return _real_job_id(self.job_id)

    @property
    def _job(self) -> str | None:
        """The run's newest job: the submitted one, or the job that resumed the run
        after it (:mod:`..runs.resumes`)."""
        from airflow_provider_rayorch.runs.resumes import newest_job

        first = self.first_job
        return None if first is None else newest_job(self._store(), self.run_id, first)

    def _job_status(self, job_id: str) -> JobStatus:
        """The job's status (the hook retries transient errors within its budget)."""
        return JobStatus.parse(self.hook.get_job_status(job_id))

    def _look(self, index: int | None = None) -> JobObservation:
        """One look of the job watch at the run (or microbatch ``index``) and its job;
        a RUNNING job is recorded in the run store (a long microbatch without a commit
        must not read ``unknown``)."""
        job_id = self._job
        hook = self.hook
        return JobWatch(
            store=self._store(),
            run_id=self.run_id,
            job_id=job_id,
            read_job=None if job_id is None else (lambda: hook.get_job_status(job_id)),
            interval=float(self.poke_interval),
            log=self.log,
            index=index,
        ).look()

    def _job_message(self, job_id: str) -> str:
        """Why an ended job ended, in the driver's words (:mod:`..common.job_end`), and
        where its log is kept (best effort: it only explains); logs its last lines."""
        end = job_end(self.hook, self._store(), self.run_id, job_id)
        end.log_tail(self.log)
        return end.why

    def _not_submitted(self) -> RayOrchJobFailed:
        """The error for a run whose submit task started no Ray job."""
        state = self._store().job_state_record(self.run_id)
        if state is not None and state.job_status is JobStatus.NOT_STARTED:
            return RayOrchJobFailed(
                f"the submit task never started a Ray job for run {self.run_id}: "
                f"{state.message}. Fix that cause (see the submit task's log), then "
                "clear the submit task."
            )
        return RayOrchJobFailed(
            f"the submit task started no Ray job for run {self.run_id} (its XCom "
            "rayorch_job_id is empty: it failed or was skipped before submitting) and the run "
            "has no manifest; see the submit task's log, then clear it."
        )

    def _to_clear(self) -> str:
        """What the error of a job that ended too early tells to clear."""
        return "the task"

    def _ended_without_manifest(
        self, job_id: str, job_status: str, message: str
    ) -> RayOrchJobFailed:
        """Record how the job ended (for the UI); the error the task fails with."""
        return RayOrchJobFailed(
            record_ended_without_manifest(
                self._store(),
                self.run_id,
                job_id,
                job_status,
                message,
                log=self.log,
                clear=self._to_clear(),
            )
        )


class RayOrchMicrobatchSensor(MicrobatchLineage, _RunStoreSensor):
    """Succeeds as soon as its source microbatch's manifest commits; returns its summary.

    Fails when the microbatch's own failed ratio exceeds ``max_failed_ratio`` (its
    summary is still pushed to XCom), or when the job ends without committing it.
    Meant to be mapped over a :class:`RayOrchSubmitOperator`'s return value, with
    ``map_index_template=MICROBATCH_MAP_INDEX_TEMPLATE`` to label each task instance
    with its source range (:func:`rayorch_microbatch_group` does both).

    :param microbatch: a descriptor ``{"index", "first_source", "count"}``.
    :param run_id: the run (XCom ``rayorch_run_id`` of the submit task; templated).
    :param run_store: the run store URI (XCom ``rayorch_run_store``; templated).
    :param job_id: the Ray job (XCom ``rayorch_job_id``), watched for an early end.
    :param repair: ``"on_clear"`` (default): the first try after a manual clear of a
        committed microbatch with FAILED or SUPPRESSED sources re-runs only those
        (docs/airflow/repair.md); ``"always"``: any try that finds them; ``False``: never.
    """

    template_fields: Sequence[str] = ("microbatch", "run_id", "run_store", "job_id", "ray_address")
    ui_color = "#e3f1fd"

    def __init__(
        self, *, microbatch: Any, repair: Any = RepairMode.ON_CLEAR, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.microbatch = microbatch
        self.repair = RepairMode.parse(repair).value

    def _repair_if_cleared(self, context: Context) -> MicrobatchManifest | None:
        """On a repair try with a committed failed microbatch: repair it, return the new
        manifest (None: not a repair try, or nothing to repair)."""
        from airflow_provider_rayorch.sensors._repair import repair_if_cleared

        return repair_if_cleared(self, context)

    @property
    def index(self) -> int:
        return int(self.microbatch["index"])

    def _resume_if_ended(self, context: Context) -> str | None:
        """The run's job to watch; on a try that may resume (:func:`may_resume`), a new
        job for the microbatches not committed yet when the newest one has ended."""
        from airflow_provider_rayorch.sensors._resume import resume_if_ended

        return resume_if_ended(self, context)

    def execute(self, context: Context) -> Any:
        manifest = self._repair_if_cleared(context) or self._store().manifest_record(
            self.run_id, self.index
        )
        if manifest is not None:
            return self._judge(plain(manifest), context)
        if self._job is None and self.job_id is not None:
            raise self._not_submitted()
        job_id = self._resume_if_ended(context)
        if not self.deferrable:
            return super().execute(context)
        self.defer(
            trigger=RayOrchMicrobatchTrigger(
                run_id=self.run_id,
                run_store=self.run_store,
                index=self.index,
                job_id=job_id,
                rayorch_conn_id=self.rayorch_conn_id,
                address=self.ray_address,
                poll_interval=self.poke_interval,
                max_failed_ratio=self.max_failed_ratio,
                end_from_trigger=self.end_from_trigger,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=float(self.timeout)),
        )

    def poke(self, context: Context) -> PokeReturnValue:
        seen = self._look(self.index)
        if seen.manifest is None and self._job is None and self.job_id is not None:
            raise self._not_submitted()
        if not seen.ended:
            return PokeReturnValue(is_done=False)
        if seen.manifest is None:
            raise RayOrchJobFailed(
                ended_before_commit(
                    self._job, seen.status, self.index, self.run_id, self._why_ended()
                )
            )
        return PokeReturnValue(is_done=True, xcom_value=self._judge(plain(seen.manifest), context))

    def execute_complete(
        self, context: Context, event: Mapping[str, Any] | str | None = None
    ) -> Any:
        """Resume on the trigger's event (``end_from_trigger=False``, or a trigger
        whose serialized form does not end the task)."""
        if isinstance(event, str):
            return self._judge_after_end(context, event)
        if not event or event.get("status") not in ("committed", "error"):
            raise RayOrchJobFailed(f"unexpected trigger event {event!r}")
        if event["status"] == "error":
            raise RayOrchJobFailed(str(event.get("message")))
        if int(event.get("index", -1)) != self.index:
            raise RayOrchJobFailed(f"event for microbatch {event.get('index')}, not {self.index}")
        return self._judge(event["summary"], context)

    def _judge_after_end(self, context: Context, ended: str) -> Any:
        """``dag.test()`` resumes a task its trigger ended, with the end state alone
        (Airflow 3.3 does not apply a trigger's task-end event there): judge again."""
        manifest = self._store().manifest_record(self.run_id, self.index)
        if manifest is None:
            raise RayOrchJobFailed(
                f"microbatch {self.index} of run {self.run_id} did not commit: its trigger "
                f"ended the task {ended} (its log above says why)"
            )
        return self._judge(plain(manifest), context)

    def _judge(self, summary: Mapping[str, Any], context: Context) -> dict[str, Any]:
        """Log what the microbatch did (counts, each failure's cause), then judge it."""
        log_microbatch(self.log, summary, self.run_id)
        return judge(summary, self.max_failed_ratio, context)

    def _why_ended(self) -> str:
        """Why the run's job ended before this microbatch committed, in the driver's
        words, and where its log is kept; logs the driver's last lines."""
        return self._job_message(str(self._job))


class RayOrchRunSensor(RunLineage, _RunStoreSensor):
    """Waits for the run's Ray job to end and returns the run lineage summary.

    Fails when the job ended without a run manifest or reported a failure (FAILED,
    STOPPED: the rule of :mod:`..common.job_watch`), or when the run's failed ratio
    exceeds ``max_failed_ratio`` (the summary is pushed to XCom all the same).

    :param outputs_asset_alias: name of an ``AssetAlias`` outlet that receives, once
        the run passed, its outputs folder as an Asset event with the lineage summary
        (``RayOrchOperator``'s event, :mod:`._assets`). Airflow 3.3 records no asset
        event for a task its trigger ends, so with an alias the sensor ends on a worker
        (``end_from_trigger=False``; ``True`` is refused), waiting there by default.
    :param submit_task_id: the task that submitted the run (``rayorch_microbatch_group``
        sets its ``submit``): a run whose newest job ended too early fails naming it, since
        clearing it with Downstream resumes the run.
    """

    template_fields: Sequence[str] = ("run_id", "run_store", "job_id", "ray_address")

    def __init__(
        self,
        *,
        outputs_asset_alias: str | None = None,
        end_from_trigger: bool | None = None,
        submit_task_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            end_from_trigger=end_from_trigger_with_alias(end_from_trigger, outputs_asset_alias),
            **with_alias_outlet(kwargs, outputs_asset_alias),
        )
        self.outputs_asset_alias = outputs_asset_alias
        self.submit_task_id = submit_task_id

    def _to_clear(self) -> str:
        task = f"task {self.submit_task_id}" if self.submit_task_id else "the run's submit task"
        return (
            f"{task} with Downstream: its next try submits a job that resumes the run "
            "(committed microbatches are kept)"
        )

    def _finish(self, summary: Mapping[str, Any], context: Context) -> dict[str, Any]:
        """Log what the run did, judge it; when it passes, attach the outputs Asset event
        to the alias."""
        log_run(self.log, summary, self.run_id)
        result = judge(summary, self.max_failed_ratio, context)
        if self.outputs_asset_alias:
            attach_outputs_event(context, self.outputs_asset_alias, result, self._store(), self.log)
        return result

    def _summary(self) -> RunManifest | None:
        return self._store().run_manifest_record(self.run_id)

    def _repaired_run(self) -> bool:
        """The run has repair records and its first job wrote a run manifest: the
        first job's id (maybe on a head that is gone) no longer matters."""
        from airflow_provider_rayorch.runs.attempts import repair_records

        store = self._store()
        return bool(repair_records(store, self.run_id)) and self._summary() is not None

    def _repairs_done(self) -> bool:
        """No repair in the run store may still write; then rewrite the run manifest."""
        from airflow_provider_rayorch.sensors._repair import repairs_pending, rewrite_run_manifest

        store = self._store()
        pending = repairs_pending(store, self.run_id, self._job_status)
        if pending:
            self.log.info("Run %s waits for the repair of microbatch(es) %s", self.run_id, pending)
            return False
        rewrite_run_manifest(store, self.run_id, self.max_failed_ratio)
        return True

    def _ended(self) -> bool:
        if self._repaired_run():
            return self._repairs_done()
        job_id = self._job
        if job_id is None:
            if self._summary() is None and self.job_id is not None:
                raise self._not_submitted()
            return True
        seen = self._look()
        if seen.ended and not seen.succeeded:
            status = str(seen.status)
            if seen.manifest is None:
                raise self._ended_without_manifest(job_id, status, self._job_message(job_id))
            raise RayOrchJobFailed(
                f"Ray job {job_id} ended {status} after writing the run manifest of run "
                f"{self.run_id}: {self._job_message(job_id)}. See the job's driver log (the "
                f"task's Ray job link), fix the cause, then clear {self._to_clear()}"
            )
        return seen.ended

    def execute(self, context: Context) -> Any:
        if _real_job_id(self.run_id) is None:  # a sources glob that matched nothing
            from airflow.sdk.exceptions import AirflowSkipException

            raise AirflowSkipException(
                "no RayOrch run to wait for: the submit task prepared none (skipped, or "
                "failed before its plan: see its log)"
            )
        if not self.deferrable or self._job is None or self._repaired_run():
            return super().execute(context)
        if self._ended():
            return self._finish(self._result(), context)
        self.defer(
            trigger=RayOrchJobTrigger(
                job_id=str(self._job),
                run_id=self.run_id,
                run_store=self.run_store,
                rayorch_conn_id=self.rayorch_conn_id,
                address=self.ray_address,
                poll_interval=self.poke_interval,
                tail_logs=False,
                max_failed_ratio=self.max_failed_ratio,
                end_from_trigger=self.end_from_trigger,
                to_clear=self._to_clear(),
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=float(self.timeout)),
        )

    def poke(self, context: Context) -> PokeReturnValue:
        if not self._ended():
            return PokeReturnValue(is_done=False)
        summary = self._finish(self._result(), context)
        return PokeReturnValue(is_done=True, xcom_value=summary)

    def _result(self) -> dict[str, Any]:
        summary = self._summary()
        if summary is None:
            raise RayOrchJobFailed(f"run {self.run_id} ended without a run manifest")
        return with_job_status(plain(summary), recorded_job_status(self._store(), self.run_id))

    def execute_complete(
        self, context: Context, event: Mapping[str, Any] | str | None = None
    ) -> Any:
        """Resume on the trigger's event (``end_from_trigger=False``, or a trigger
        whose serialized form does not end the task)."""
        summary = self._summary()
        if isinstance(event, str):  # dag.test() resumes a task its trigger ended
            if summary is None:
                raise RayOrchJobFailed(
                    f"run {self.run_id} has no run manifest: its trigger ended the task "
                    f"{event} (its log above says why)"
                )
            status = recorded_job_status(self._store(), self.run_id)
            return self._finish(with_job_status(plain(summary), status), context)
        if not event or "status" not in event:
            raise RayOrchJobFailed(f"unexpected trigger event {event!r}")
        if summary is None:
            raise self._ended_without_manifest(
                str(event.get("job_id")), str(event.get("job_status")), str(event.get("message"))
            )
        return self._finish(with_job_status(plain(summary), event.get("job_status")), context)
