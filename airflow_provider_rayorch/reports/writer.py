"""Render a run's report and store it atomically as ``<run>/report.html``."""

from __future__ import annotations

import posixpath
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from ._data import load_run
from ._html import render_page

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow_provider_rayorch.runs.store import RunStore

__all__ = [
    "REPORT_NAME",
    "read_run_report",
    "render_run_report",
    "report_outdated",
    "report_uri",
    "write_run_report",
]

REPORT_NAME = "report.html"


def report_uri(store: RunStore, run_id: str) -> str:
    """Where the report of ``run_id`` lives (a path for local stores, else a URI)."""
    return store.run_uri(run_id).rstrip("/") + "/" + REPORT_NAME


def render_run_report(
    store: RunStore,
    run_id: str,
    timeline: Sequence[Mapping[str, Any]] = (),
    calls: Sequence[Mapping[str, Any]] = (),
    *,
    microbatches: Sequence[Mapping[str, Any]] | None = None,
    generated_at: datetime | None = None,
) -> str:
    """The report's HTML, from the store plus the engine's timeline and Call metrics.

    :param timeline: ``Executor.timeline()`` / ``RunResult.timeline`` records.
    :param calls: ``RunResult.calls`` (per-Call metrics); may be empty.
    :param microbatches: per-microbatch timings ``{"index", "started_s", "finished_s"}``
        (``MicrobatchResult.metrics`` plus ``index``) on the timeline's clock. Without
        them the manifests' modification times place the commits.
    """
    timings = None if microbatches is None else {int(m["index"]): m for m in microbatches}
    now = generated_at or datetime.now(UTC)
    view = load_run(store, run_id, timings, now=now)
    when = now.strftime("%Y-%m-%d %H:%M:%S UTC")
    return render_page(view, list(timeline), list(calls), when)


def write_run_report(
    store: RunStore,
    run_id: str,
    timeline: Sequence[Mapping[str, Any]] = (),
    calls: Sequence[Mapping[str, Any]] = (),
    *,
    microbatches: Sequence[Mapping[str, Any]] | None = None,
) -> str:
    """Render and store the report (replacing the previous one atomically); returns its URI."""
    html = render_run_report(store, run_id, timeline, calls, microbatches=microbatches)
    path = posixpath.join(store.root, run_id, REPORT_NAME)
    store.fs.create_dir(posixpath.dirname(path), recursive=True)
    data = html.encode("utf-8")
    if isinstance(store.fs, pafs.LocalFileSystem):
        tmp = f"{path}.tmp-{uuid.uuid4().hex}"
        with store.fs.open_output_stream(tmp) as f:
            f.write(data)
        store.fs.move(tmp, path)
    else:  # object stores: a single put is atomic
        with store.fs.open_output_stream(path) as f:
            f.write(data)
    return report_uri(store, run_id)


def read_run_report(store: RunStore, run_id: str) -> str | None:
    """The stored report's HTML, or None when the driver has not written one."""
    path = posixpath.join(store.root, run_id, REPORT_NAME)
    try:
        with store.fs.open_input_stream(path) as f:
            return bytes(f.read()).decode("utf-8")
    except FileNotFoundError:
        return None


def report_outdated(store: RunStore, run_id: str) -> bool:
    """A repair record (``repairs/mb-N.json``) is newer than the stored report: the
    report shows an earlier attempt and must be rendered again from the run store."""
    base = posixpath.join(store.root, run_id)
    report = store.fs.get_file_info(posixpath.join(base, REPORT_NAME))
    if report.type != pafs.FileType.File or report.mtime is None:
        return False
    selector = pafs.FileSelector(posixpath.join(base, "repairs"), allow_not_found=True)
    return any(
        info.type == pafs.FileType.File and info.mtime is not None and info.mtime >= report.mtime
        for info in store.fs.get_file_info(selector)
    )
