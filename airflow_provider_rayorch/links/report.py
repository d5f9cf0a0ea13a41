"""Operator extra link "RayOrch report": the plugin page of the task instance's run.

Every address of that page is built here: the link's, and the one the plugin sends
a "RayOrch report" tab to when Airflow's UI left its ``{MAP_INDEX}`` placeholder
unfilled (a task that is not mapped)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk.types import TaskInstanceKey

__all__ = ["URL_PREFIX", "RayOrchReportLink", "report_path", "report_query"]

#: Where the plugin's FastAPI app is mounted in the API server.
URL_PREFIX = "/rayorch"


def _base_path() -> str:
    """The path part of ``[api] base_url`` (empty when Airflow is served at the root)."""
    from airflow.sdk.configuration import conf

    base = conf.get("api", "base_url", fallback="") or ""
    return urlsplit(base).path.rstrip("/")


def report_query(dag_id: str, run_id: str, task_id: str, map_index: int = -1, **extra: str) -> str:
    """The query string of one task instance's report page (``map_index`` -1 for a
    task that is not mapped), with ``extra`` parameters after it."""
    fields = {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": map_index}
    return urlencode({**fields, **extra})


def report_path(dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> str:
    """The browser path of one task instance's report page."""
    return f"{_base_path()}{URL_PREFIX}/ti?{report_query(dag_id, run_id, task_id, map_index)}"


def report_path_of(ti_key: TaskInstanceKey) -> str:
    """:func:`report_path` of a task instance key."""
    map_index = int(getattr(ti_key, "map_index", -1))
    return report_path(ti_key.dag_id, ti_key.run_id, ti_key.task_id, map_index)


class RayOrchReportLink(BaseOperatorLink):
    """ "RayOrch report": the run report of the task (a microbatch task opens its part).

    Computed from the task instance key alone, so it works both on the worker (where
    Airflow 3 evaluates links of the operator's own ``operator_extra_links``) and in
    the API server (links a plugin adds). The page resolves the run from XCom.
    """

    name = "RayOrch report"

    def get_link(self, operator: Any, *, ti_key: TaskInstanceKey) -> str:
        return report_path_of(ti_key)
