"""Self-contained HTML run reports, written into the run store next to the manifests.

``<run store>/<run_id>/report.html`` shows per-microbatch status, per-source
outcomes with causes (filterable), each Call's actors busy and idle over time,
ready-queue depth, batch-size histograms and the completion curve of sources, as
inline SVG with no external asset. This package imports neither airflow nor ray,
so the Ray job driver calls :func:`write_run_report` after every commit.
:func:`read_run_state` decides a run's state for the UI (see :mod:`.state`) and
:func:`restate_report` shows it in a stored report; after a repair
(:func:`report_outdated`) the report is rendered again from the store, with each
repaired microbatch's attempt history (:mod:`.history`).
"""

from __future__ import annotations

from .restate import restate_report
from .state import STALE_AFTER, RunState, read_run_state
from .writer import (
    REPORT_NAME,
    read_run_report,
    render_run_report,
    report_outdated,
    report_uri,
    write_run_report,
)

__all__ = [
    "REPORT_NAME",
    "STALE_AFTER",
    "RunState",
    "read_run_report",
    "read_run_state",
    "render_run_report",
    "report_outdated",
    "report_uri",
    "restate_report",
    "write_run_report",
]
