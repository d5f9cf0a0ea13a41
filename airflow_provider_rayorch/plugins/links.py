"""Re-export of the "RayOrch report" link, which lives in ``links.report`` (beside the
"Ray job" link) so tasks never import the UI plugin package."""

from __future__ import annotations

from airflow_provider_rayorch.links.report import URL_PREFIX, RayOrchReportLink, report_path

__all__ = ["URL_PREFIX", "RayOrchReportLink", "report_path"]
