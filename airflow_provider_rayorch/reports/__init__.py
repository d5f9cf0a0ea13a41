"""Run reports rendered from data, never stored as HTML that is served.

The driver stores its measurements (the actors' timeline, Call metrics, commit
times) as ``<run store>/<run_id>/report.json`` (:mod:`.model`, :mod:`.measure`). A
report page is the run store as it is now (plan, manifests, outputs, repairs, the
state of :mod:`.state`) plus those measurements, rendered through autoescaping
Jinja2 templates (:mod:`.page`): per-microbatch status, per-source outcomes with
causes, each Call's actors busy and idle over time, ready-queue depth, batch-size
histograms and the completion curve, as inline SVG drawn from data. The plugin
renders it on every request; the driver also keeps ``report.html``, the same
template rendered at write time, for users who open the run store's files. This
package imports neither airflow nor ray.
"""

from __future__ import annotations

from airflow_provider_rayorch.runs.run_state import STALE_AFTER, RunState, read_run_state

from .model import ReportData, ReportDataError
from .page import SourceForm
from .writer import (
    DATA_NAME,
    REPORT_NAME,
    read_report_data,
    read_run_report,
    render_run_report,
    report_uri,
    write_run_report,
)

__all__ = [
    "DATA_NAME",
    "REPORT_NAME",
    "STALE_AFTER",
    "ReportData",
    "ReportDataError",
    "RunState",
    "SourceForm",
    "read_report_data",
    "read_run_report",
    "read_run_state",
    "render_run_report",
    "report_uri",
    "write_run_report",
]
