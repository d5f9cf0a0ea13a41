"""The Airflow 3 UI plugin: RayOrch run reports served by the API server.

``plugin.RayOrchPlugin`` mounts a FastAPI app at ``/rayorch`` and adds external
views (a "RayOrch runs" page under Browse, a tab on DAG runs and task instances).
The operator extra link to a task's report is ``links.report.RayOrchReportLink``,
outside this package: nothing here is imported by tasks or Ray workers.
"""
