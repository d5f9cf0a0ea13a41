"""``RayOrchPlugin``: registered through the ``airflow.plugins`` entry point."""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from airflow_provider_rayorch.links.report import URL_PREFIX, RayOrchReportLink
from airflow_provider_rayorch.sensors.rayorch import RayOrchMicrobatchSensor, RayOrchRunSensor

from .app import app

__all__ = ["RayOrchPlugin"]


class _SensorReportLink(RayOrchReportLink):
    """The report link on the per-microbatch sensors, which declare no links of their own."""

    operators = [RayOrchMicrobatchSensor, RayOrchRunSensor]


class RayOrchPlugin(AirflowPlugin):
    """RayOrch run reports in the Airflow UI.

    - ``/rayorch/``: recent RayOrch runs ("Browse > RayOrch runs");
    - ``/rayorch/dagrun``: a "RayOrch" tab on every DAG run;
    - ``/rayorch/ti``: a "RayOrch report" tab on every task instance, and the
      target of the "RayOrch report" extra link.
    """

    name = "rayorch"
    fastapi_apps = [{"app": app, "url_prefix": URL_PREFIX, "name": "RayOrch run reports"}]
    external_views = [
        {
            "name": "RayOrch runs",
            "href": "rayorch/",
            "destination": "nav",
            "category": "browse",
            "url_route": "rayorch-runs",
        },
        {
            "name": "RayOrch",
            "href": "rayorch/dagrun?dag_id={DAG_ID}&run_id={RUN_ID}",
            "destination": "dag_run",
            "url_route": "rayorch-dag-run",
        },
        {
            "name": "RayOrch report",
            "href": "rayorch/ti?dag_id={DAG_ID}&run_id={RUN_ID}&task_id={TASK_ID}"
            "&map_index={MAP_INDEX}",
            "destination": "task_instance",
            "url_route": "rayorch-task-instance",
        },
    ]
    operator_extra_links = [_SensorReportLink()]
