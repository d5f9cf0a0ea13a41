"""The run sensor's outputs Asset event: the lineage summary on the sensor's alias.

The event is :func:`~airflow_provider_rayorch.lineage.assets.outputs_asset_event`'s,
the one ``RayOrchOperator`` attaches: the run's outputs folder under the URI the
OpenLineage provider turns back into the output dataset's name, the ``rayorch``
facet's fields (capped failures, no URI query or user information) as ``extra``.

Airflow 3.3 records a task's asset events only from its worker: a task its trigger
ends (``TaskSuccessEvent``) gets its state and XComs, never outlet events
(``airflow.models.trigger.handle_event_submit``), and a trigger has no way to post
one. So a run sensor with an alias resumes on a worker (``end_from_trigger=False``),
where ``execute_complete`` attaches the event.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_rayorch.rayorch.errors import UsageError

__all__ = ["end_from_trigger_with_alias", "with_alias_outlet"]


def with_alias_outlet(kwargs: dict[str, Any], alias: str | None) -> dict[str, Any]:
    """The task's keyword arguments with ``AssetAlias(alias)`` among its outlets."""
    if not alias:
        return kwargs
    from airflow.sdk import AssetAlias

    outlets = kwargs.get("outlets") or []
    outlets = list(outlets) if isinstance(outlets, list | tuple) else [outlets]
    return {**kwargs, "outlets": [*outlets, AssetAlias(alias)]}


def end_from_trigger_with_alias(end_from_trigger: bool | None, alias: str | None) -> bool | None:
    """``False`` when an alias is set (the event is attached on a worker; see the module
    docstring); an explicit ``True`` with an alias is refused."""
    if not alias:
        return end_from_trigger
    if end_from_trigger:
        raise UsageError(
            f"outputs_asset_alias={alias!r} needs end_from_trigger=False (or None): Airflow "
            "3.3 records no asset event for a task its trigger ends, so the sensor resumes "
            "on a worker to attach it (docs/airflow/operators.md, the run sensor)"
        )
    return False
