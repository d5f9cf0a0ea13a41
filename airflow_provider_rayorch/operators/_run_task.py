"""What the operator and the submit operator share: their parameters, the
connection's hooks and run store, the plan preparation (compile here, write or reuse
the plan record), the job status read, ``on_kill`` and OpenLineage.

Both tasks are composed from this and the submit path (:mod:`._submit`); only the
operator adds the wait (:mod:`._job_wait`) and the embedded driver (:mod:`._embedded`).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import AssetAlias, BaseOperator
from airflow.sdk.configuration import conf

from airflow_provider_rayorch.common.liveness import record_stopped
from airflow_provider_rayorch.common.polling import RetryPolicy
from airflow_provider_rayorch.common.repair import RepairMode
from airflow_provider_rayorch.common.run_ids import run_id_from_context
from airflow_provider_rayorch.common.sources import stream_sources
from airflow_provider_rayorch.common.states import (
    CONN_ID_KEY,
    RUN_ID_KEY,
    RUN_STORE_KEY,
)
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook, mask_secrets
from airflow_provider_rayorch.links.rayorch import RayJobLink
from airflow_provider_rayorch.links.report import RayOrchReportLink
from airflow_provider_rayorch.operators import _common
from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.runs.secrets import driver_env, ray_init_secrets

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow.sdk import Context

    from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

__all__ = ["RunTask"]


class RunTask(BaseOperator):
    """A task that prepares one RayOrch run and submits its Ray job; its parameters
    are :class:`~airflow_provider_rayorch.operators.rayorch.RayOrchOperator`'s."""

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
    #: The Jobs API at this task's address is known to have answered (see
    #: ``RayOrchSubmitOperator(answered_before=...)``); the operator keeps ``False``.
    answered_before: bool = False

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
            raise UsageError(f"max_failed_ratio must be within [0, 1], got {max_failed_ratio}")
        if input_batch_size is not None and int(input_batch_size) < 1:
            raise UsageError(f"input_batch_size must be >= 1, got {input_batch_size}")
        if backend not in ("ray", "local"):
            raise UsageError(f"backend must be 'ray' or 'local', got {backend!r}")
        if on_plan_change not in ("fail", "replace"):
            raise UsageError(f"on_plan_change must be 'fail' or 'replace', got {on_plan_change!r}")
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
        self._job_id: str | None = None
        self._prepared_run_id: str | None = None  # the run this try prepared (on_kill's)
        self._result: dict[str, Any] | None = None
        #: modules of the compiled pipeline without ``batch_timeout_s`` (a hang's suspects)
        self._untimed_modules: list[str] = []

    # -- plumbing ---------------------------------------------------------------------
    @cached_property
    def hook(self) -> RayOrchHook:
        """Submits and polls. A Jobs API that never answered fails a submit at once (a
        wrong address) unless :attr:`answered_before` says it did; a request about a
        job already submitted retries a refused connection within the budget (a
        dashboard restarting)."""
        return RayOrchHook(
            self.rayorch_conn_id,
            address=self.ray_address,
            answered_before=self.answered_before,
            retry=self._retry_policy(),
        )

    def _retry_policy(self) -> RetryPolicy:
        """The hook's budget for transient Jobs-API errors, paced by the poll interval."""
        return RetryPolicy(base_s=float(self.poll_interval))

    def _store(self) -> RunStore:
        from airflow_provider_rayorch.runs.store import RunStore

        # the connection's run_store_options (endpoint, region, keys) open any store URI
        settings = self.hook.settings
        return RunStore(self.run_store or self.hook.run_store_uri, settings.run_store_options)

    def _run_id(self, context: Context) -> str:
        return run_id_from_context(context)

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
            dag_file=self.dag.fileloc if self.has_dag() else None,
        )
        self._untimed_modules = [
            m.name for m in getattr(compiled, "modules", ()) if m.batch_timeout_s is None
        ]
        sources, n_columns, strings = stream_sources(
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
            strings=strings,
        )
        ti = context["ti"]
        self._prepared_run_id = run_id
        ti.xcom_push(key=RUN_ID_KEY, value=run_id)
        ti.xcom_push(key=RUN_STORE_KEY, value=store.uri)
        ti.xcom_push(key=CONN_ID_KEY, value=self.rayorch_conn_id)  # its run_store_options
        self.log.info(
            "Run %s: %d sources in %d microbatch(es), plan %s, run store %s",
            run_id,
            plan.total_sources,
            len(plan.microbatches()),
            plan.fingerprint[:12],
            store.run_uri(run_id),
        )
        return plan

    def get_job_status(self, external_id: Any, context: Context) -> str:
        self._job_id = job_id = str(external_id)
        return str(self.hook.get_job_status(job_id))

    # -- kill ----------------------------------------------------------------------------
    def on_kill(self) -> None:
        """Stop the run's Ray job (never delete it)."""
        if self._job_id and self.hook.stop_job(self._job_id) and self._prepared_run_id:
            record_stopped(self._store(), self._prepared_run_id, self._job_id, log=self.log)

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
