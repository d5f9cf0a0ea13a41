"""The per-microbatch pattern: one Airflow task instance per source microbatch.

``RayOrchSubmitOperator`` compiles and submits, and returns the list of microbatch
descriptors (Airflow maps only over a return value); ``RayOrchMicrobatchSensor``
is mapped over it. :func:`rayorch_microbatch_group` wires both (and, on one
machine, a loopback Ray head as setup/teardown).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from airflow.sdk import TaskGroup

from airflow_provider_rayorch.common.states import JOB_ID_KEY, RUN_ID_KEY, RUN_STORE_KEY, JobStatus
from airflow_provider_rayorch.exceptions import RayOrchClusterError, RayOrchPermanentError
from airflow_provider_rayorch.operators._map_length import (
    literal_source_count,
    too_many_microbatches,
)
from airflow_provider_rayorch.operators._run_task import RunTask
from airflow_provider_rayorch.operators._submit import JobSubmitting
from airflow_provider_rayorch.operators.local_head import (
    RayLocalHeadStartOperator,
    RayLocalHeadStopOperator,
)
from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.sensors._wait_mode import LISTENER_SENSOR_WINDOW, wait_mode
from airflow_provider_rayorch.sensors.rayorch import (
    MICROBATCH_MAP_INDEX_TEMPLATE,
    RayOrchMicrobatchSensor,
    RayOrchRunSensor,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow.sdk import Context

__all__ = ["RayOrchSubmitOperator", "rayorch_microbatch_group"]


class RayOrchSubmitOperator(JobSubmitting, RunTask):
    """Compile, submit the run's Ray job, and return its microbatch descriptors
    ``[{"index", "first_source", "count"}, ...]`` without waiting for the job.

    Composed of the parts the operator is made of (the run task's parameters and plan,
    the idempotent submit); it takes :class:`RayOrchOperator`'s parameters.

    The job must outlive this task, so a cluster address is required (a connection
    host or ``ray_address``). A retry re-attaches to a running job (task state store,
    then the cluster's job list) instead of submitting a second one.

    :param answered_before: the Jobs API at this address is known to have answered, so
        a refused or failed connection is retried within the one retry budget from the
        first request. :func:`rayorch_microbatch_group` sets it with ``local_head=True``
        (its ``ray_head`` task waited until the head's Jobs API and job agent answered).
        By default a first contact that fails ends the task at once: a wrong address
        gets its hint instead of minutes of retries.
    """

    def __init__(
        self, *, durable: bool = True, answered_before: bool = False, **kwargs: Any
    ) -> None:
        # RayOrchOperator's parameters, ``durable`` (ResumableJobMixin's) included
        if kwargs.get("outputs_asset_alias"):
            raise UsageError(
                f"RayOrchSubmitOperator(outputs_asset_alias={kwargs['outputs_asset_alias']!r})"
                ": the submit ends before the run has outputs; give the alias to the run "
                "sensor (RayOrchRunSensor(outputs_asset_alias=...), or "
                "rayorch_microbatch_group(outputs_asset_alias=...))"
            )
        super().__init__(**kwargs)
        self.durable = durable
        self.answered_before = bool(answered_before)

    def execute(self, context: Context) -> list[dict[str, int]]:
        if self.hook.embedded:
            raise RayOrchClusterError(
                "the per-microbatch pattern needs a Ray cluster address (the job outlives "
                "this task): set the connection's host, pass ray_address, or use "
                "rayorch_microbatch_group(local_head=True) for a loopback head",
            )
        plan = self.prepare(context)
        descriptors = plan.microbatches()
        too_many = too_many_microbatches(
            plan.total_sources, plan.input_batch_size, f"task {self.task_id}"
        )
        if too_many is not None:  # Airflow could not expand the microbatch sensors
            self._refuse_unmappable(plan.run_id, too_many)
        store = self._store()
        if store.run_manifest_record(plan.run_id) is not None:
            self.log.info("Run %s already finished; nothing to submit", plan.run_id)
            context["ti"].xcom_push(key=JOB_ID_KEY, value="")
            return descriptors
        state = context.get("task_state_store")
        job_id = state.get(JOB_ID_KEY) if state is not None else None
        if job_id and JobStatus.parse(self.get_job_status(str(job_id), context)).is_active:
            self.log.info("Re-attaching to running job %s", job_id)
            self._push_job(context, str(job_id))
        else:
            job_id = self.submit_job(context)
            self._push_job(context, str(job_id))
            if state is not None:
                from airflow.sdk.execution_time.context import NEVER_EXPIRE

                state.set(JOB_ID_KEY, job_id, retention=NEVER_EXPIRE)
        return descriptors

    def _refuse_unmappable(self, run_id: str, message: str) -> None:
        """Fail before submitting. When no job ever ran the run, its plan is deleted (the
        next try after the fix, a larger ``input_batch_size``, plans it afresh) and the
        run store says why no job started; a run a job already ran is left as it is."""
        store = self._store()
        state = store.job_state_record(run_id)
        if state is None or state.job_status is JobStatus.NOT_STARTED:
            store.delete_run(run_id)
            self._record_job_state(run_id, JobStatus.NOT_STARTED, message)
        raise RayOrchPermanentError(message)


def rayorch_microbatch_group(
    group_id: str,
    *,
    pipeline: Any,
    sources: Any,
    pipeline_kwargs: Mapping[str, Any] | None = None,
    input_batch_size: int | None = None,
    max_active_input_batches: int = 1,
    rayorch_conn_id: str = "rayorch_default",
    ray_address: str | None = None,
    max_failed_ratio: float = 0.0,
    local_head: bool | Literal["shared"] = False,
    local_head_num_cpus: int | None = None,
    deferrable: bool | None = None,
    poke_interval: float = 5.0,
    repair: Any = "on_clear",
    submit_kwargs: Mapping[str, Any] | None = None,
    sensor_kwargs: Mapping[str, Any] | None = None,
    run_sensor_kwargs: Mapping[str, Any] | None = None,
    outputs_asset_alias: str | None = None,
) -> TaskGroup:
    """A task group: ``submit`` >> ``microbatch`` (mapped sensors) >> ``run``.

    Each ``microbatch`` task instance succeeds as soon as its manifest commits and
    fails when its own failed ratio exceeds ``max_failed_ratio``; ``run`` (trigger
    rule ``all_done``) waits for the job, returns the run summary and judges the
    whole run against the same ratio. With ``local_head=True`` a ``ray_head`` setup
    task starts a loopback Ray head of the run's own and a ``stop_ray_head`` teardown
    task stops it after ``run``; with ``local_head="shared"`` the ``ray_head`` task finds
    the machine's shared head (or starts it, once for runs starting together) and no
    task stops it (:mod:`._shared_head`). ``submit`` then retries a refused connection to
    that head (``answered_before``: ``ray_head`` saw it answer). ``repair`` is the microbatch
    sensors' (docs/airflow/repair.md): clearing a failed ``microbatch`` task instance
    with its downstream re-runs only its FAILED and SUPPRESSED sources, and ``run``
    waits for that repair.

    ``deferrable`` (default None) is the sensors' rule (``sensors/_wait_mode.py``): they
    defer and end in the triggerer, unless listener plugins are registered (the
    OpenLineage provider's), where they wait on workers, at most
    ``LISTENER_SENSOR_WINDOW`` microbatch sensors of one run at once unless
    ``sensor_kwargs`` sets ``max_active_tis_per_dagrun``. ``sensor_kwargs`` go to the
    microbatch sensors, ``run_sensor_kwargs`` to the ``run`` sensor (for example
    ``{"end_from_trigger": False}`` on both: each task resumes on a worker once its
    trigger fired). ``outputs_asset_alias`` is the ``run`` sensor's: once the run passed,
    its outputs folder as an Asset event.
    """
    _check_map_length(group_id, sources, input_batch_size)
    with TaskGroup(group_id) as group:
        prefix = f"{group.group_id}." if group.group_id else ""
        head = None
        address = ray_address
        if local_head not in (False, True, "shared"):
            raise UsageError(
                f"rayorch_microbatch_group({group_id!r}): local_head={local_head!r}; use "
                "True (a head of the run's own), \"shared\" (the machine's shared head) or "
                "False (ray_address or the connection's cluster)"
            )
        if local_head:
            head = RayLocalHeadStartOperator(
                task_id="ray_head", num_cpus=local_head_num_cpus, shared=local_head == "shared"
            )
            address = f"{{{{ ti.xcom_pull(task_ids='{prefix}ray_head')['address'] }}}}"
        submit = RayOrchSubmitOperator(
            task_id="submit",
            pipeline=pipeline,
            pipeline_kwargs=pipeline_kwargs,
            sources=sources,
            input_batch_size=input_batch_size,
            max_active_input_batches=max_active_input_batches,
            rayorch_conn_id=rayorch_conn_id,
            ray_address=address,
            max_failed_ratio=max_failed_ratio,
            **{"answered_before": bool(local_head), **dict(submit_kwargs or {})},
        )

        def pull(key: str) -> str:
            return f"{{{{ ti.xcom_pull(task_ids='{prefix}submit', key='{key}') }}}}"

        common: dict[str, Any] = {
            "run_id": pull(RUN_ID_KEY),
            "run_store": pull(RUN_STORE_KEY),
            "job_id": pull(JOB_ID_KEY),
            "rayorch_conn_id": rayorch_conn_id,
            "ray_address": address,
            "deferrable": deferrable,
            "poke_interval": poke_interval,
        }
        extra = {
            "map_index_template": MICROBATCH_MAP_INDEX_TEMPLATE,
            **_own_keywords(group_id, "sensor_kwargs", sensor_kwargs),
        }
        if not wait_mode(extra.get("deferrable", deferrable), None).deferrable:
            extra.setdefault("max_active_tis_per_dagrun", LISTENER_SENSOR_WINDOW)  # on workers
        sensors = RayOrchMicrobatchSensor.partial(
            task_id="microbatch",
            max_failed_ratio=max_failed_ratio,
            repair=repair,
            **{**common, **extra},
        ).expand(microbatch=submit.output)
        run = RayOrchRunSensor(
            task_id="run",
            trigger_rule="all_done",
            max_failed_ratio=max_failed_ratio,
            outputs_asset_alias=outputs_asset_alias,
            submit_task_id=f"{prefix}submit",
            **{**common, **_own_keywords(group_id, "run_sensor_kwargs", run_sensor_kwargs)},
        )
        submit >> sensors >> run
        if head is not None:
            head >> submit
        if head is not None and local_head is True:
            stop = RayLocalHeadStopOperator(task_id="stop_ray_head", head=head.output)
            run >> stop.as_teardown(setups=head)
    return group


#: Keywords the group sets on its sensors to wire them together (or from its own
#: parameters): ``sensor_kwargs`` and ``run_sensor_kwargs`` may not set them.
_GROUP_KEYWORDS = frozenset(
    {"task_id", "run_id", "run_store", "job_id", "microbatch", "submit_task_id",
     "max_failed_ratio", "repair", "trigger_rule", "outputs_asset_alias"}
)  # fmt: skip


def _own_keywords(group_id: str, name: str, given: Mapping[str, Any] | None) -> dict[str, Any]:
    """A sensor's keywords from the user, refusing those the group sets itself."""
    taken = sorted(_GROUP_KEYWORDS.intersection(given or {}))
    if taken:
        raise UsageError(
            f"rayorch_microbatch_group({group_id!r}): {name} sets {', '.join(taken)}, which "
            "the group sets itself (they wire its tasks together); pass the group's own "
            "parameter of that name where there is one (max_failed_ratio, repair, "
            "outputs_asset_alias), and leave the others out"
        )
    return dict(given or {})


def _check_map_length(group_id: str, sources: Any, input_batch_size: Any) -> None:
    """Literal sources in more microbatches than Airflow maps fail the DAG's parse."""
    total = literal_source_count(sources)
    if total is None or not (input_batch_size is None or isinstance(input_batch_size, int)):
        return
    too_many = too_many_microbatches(
        total, input_batch_size, f"rayorch_microbatch_group({group_id!r})"
    )
    if too_many is not None:
        raise UsageError(too_many)
