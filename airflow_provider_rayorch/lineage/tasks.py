"""What each task reports to OpenLineage: the bodies of the operators' and sensors'
``get_openlineage_facets_on_start/complete/failure`` methods.

- ``RayOrchOperator``: the run it ran (run id from the task instance), its summary
  once it ended; on start, only what its rendered ``sources`` list names.
- ``RayOrchSubmitOperator`` (the same methods): the plan it wrote, before the run.
- ``RayOrchMicrobatchSensor``: its microbatch's sources, manifest and facet.
- ``RayOrchRunSensor``: the run's summary.

The OpenLineage provider calls these after the task ran (in the same worker
process); each reads the run store (a plan record, a manifest, one Parquet footer).
OpenLineage is imported here only, never at the operators' import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.runs.boundary import plain

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_rayorch.runs.store import RunStore

__all__ = [
    "MicrobatchLineage",
    "RunLineage",
    "microbatch_lineage",
    "operator_lineage_on_end",
    "operator_lineage_on_start",
    "run_lineage",
]


def _judged(summary: Mapping[str, Any] | None, max_failed_ratio: float) -> dict[str, Any] | None:
    """The summary as the task judged it (its ``state`` against the task's ratio)."""
    if summary is None:
        return None
    from airflow_provider_rayorch.common.ratio import judge_summary

    return dict(judge_summary(dict(summary), max_failed_ratio).summary)


def operator_lineage_on_start(operator: Any) -> Any:
    """Inputs of a ``sources`` list, the only thing known before the run id is (the
    provider passes no task instance on start); a glob is listed by the task itself."""
    from airflow.providers.openlineage.extractors import OperatorLineage

    from airflow_provider_rayorch.common.sources import resolve_sources
    from airflow_provider_rayorch.lineage.openlineage import input_datasets

    sources = operator.sources
    if isinstance(sources, str):
        return OperatorLineage()
    rows, n_columns = resolve_sources(sources)
    return OperatorLineage(inputs=input_datasets(rows, n_columns))


def operator_lineage_on_end(operator: Any, task_instance: Any, *, failed: bool) -> Any:
    """The run of ``operator`` (a ``RayOrchOperator`` or ``RayOrchSubmitOperator``)
    after its task ended: the summary it returned, else the stored run manifest."""
    from airflow.providers.openlineage.extractors import OperatorLineage

    from airflow_provider_rayorch.common.run_ids import run_id_from_context
    from airflow_provider_rayorch.lineage.openlineage import operator_lineage

    result = getattr(operator, "_result", None)
    if task_instance is not None:
        run_id = run_id_from_context({"ti": task_instance})
    elif isinstance(result, dict) and result.get("run_id"):
        run_id = str(result["run_id"])
    else:
        return OperatorLineage()  # no task instance, no run: nothing is known
    store: RunStore = operator._store()
    summary = result if isinstance(result, dict) else plain(store.run_manifest_record(run_id))
    return operator_lineage(
        store,
        run_id,
        summary=_judged(summary, operator.max_failed_ratio),
        failed=failed,
    )


def _sensor_store(sensor: Any) -> RunStore:
    """The sensor's run store, opened without a connection lookup where the
    connection's ``run_store_options`` cannot apply (anything but S3 and GCS).

    The listener runs these methods in a forked process with a 10 s budget
    (``[openlineage] execution_timeout``); a sensor builds a fresh hook per store,
    whose connection lookup could stall that fork (it did under ``airflow dags test``,
    where every sensor's extraction was killed)."""
    from airflow_provider_rayorch.runs.store import RunStore

    uri = str(sensor.run_store)
    if uri.partition("://")[0].lower() not in ("s3", "gs", "gcs") or "://" not in uri:
        return RunStore(uri)
    hook = sensor.__dict__.get("hook")  # the sensor's own, if execute built it
    if hook is not None and "settings" in hook.__dict__:  # its connection already read
        return RunStore(uri, hook.settings.run_store_options)
    return sensor._store()  # credentials and endpoint come from the connection


def _no_run(sensor: Any) -> Any:
    """An empty ``OperatorLineage`` when the submit task prepared no run (a glob that
    matched nothing renders ``run_id`` as ``"None"``), else None."""
    if str(sensor.run_id or "").strip() not in ("", "None"):
        return None
    from airflow.providers.openlineage.extractors import OperatorLineage

    return OperatorLineage()


def microbatch_lineage(sensor: Any, *, failed: bool = False, started: bool = False) -> Any:
    """A mapped microbatch task's: its own sources, its manifest, its facet."""
    from airflow_provider_rayorch.lineage.openlineage import operator_lineage

    nothing = _no_run(sensor)
    if nothing is not None:
        return nothing
    store = _sensor_store(sensor)
    microbatch = dict(sensor.microbatch)
    manifest = None if started else store.manifest_record(sensor.run_id, int(microbatch["index"]))
    return operator_lineage(
        store,
        sensor.run_id,
        summary=_judged(plain(manifest), sensor.max_failed_ratio),
        microbatch=microbatch,
        manifest=manifest,
        failed=failed,
    )


def run_lineage(sensor: Any, *, failed: bool = False, started: bool = False) -> Any:
    """The ``run`` task's: the whole run and its run manifest."""
    from airflow_provider_rayorch.lineage.openlineage import operator_lineage

    nothing = _no_run(sensor)
    if nothing is not None:
        return nothing
    store = _sensor_store(sensor)
    summary = None if started else plain(store.run_manifest_record(sensor.run_id))
    return operator_lineage(
        store,
        sensor.run_id,
        summary=_judged(summary, sensor.max_failed_ratio),
        failed=failed,
    )


class MicrobatchLineage:
    """``RayOrchMicrobatchSensor``'s OpenLineage methods (a mixin: its sensor module
    stays within the size limit); each reads its run store only when called."""

    def get_openlineage_facets_on_start(self) -> Any:
        """This microbatch's input locations and the run's outputs folder."""
        return microbatch_lineage(self, started=True)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """As on start, with this microbatch's ``rayorch`` facet from its manifest."""
        return microbatch_lineage(self)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        """As on complete, plus an ``errorMessage`` facet."""
        return microbatch_lineage(self, failed=True)


class RunLineage:
    """``RayOrchRunSensor``'s OpenLineage methods."""

    def get_openlineage_facets_on_start(self) -> Any:
        """The run's input locations and outputs folder."""
        return run_lineage(self, started=True)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """As on start, with the run's ``rayorch`` facet from its run manifest."""
        return run_lineage(self)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        """As on complete, plus an ``errorMessage`` facet."""
        return run_lineage(self, failed=True)
