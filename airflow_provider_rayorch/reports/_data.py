"""What a report shows, read from a run store: plan, manifests, output outcomes."""

from __future__ import annotations

import bisect
import json
import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from airflow_provider_rayorch.runs import paths
from airflow_provider_rayorch.runs.attempts import repair_records
from airflow_provider_rayorch.runs.driver_log import driver_log_names, driver_log_uri
from airflow_provider_rayorch.runs.history import AttemptRow, attempt_rows
from airflow_provider_rayorch.runs.run_state import RunState, read_run_state
from airflow_provider_rayorch.runs.uris import fs_path

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping
    from datetime import datetime

    from airflow_provider_rayorch.runs.records import PlanRecord
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = [
    "LABELED_MICROBATCHES",
    "MAX_SOURCE_ROWS",
    "MicrobatchView",
    "RunView",
    "apply_state",
    "label_rows",
    "load_run",
    "microbatch_labels",
]

#: At most this many per-source rows are listed (failures first); counts are never capped.
MAX_SOURCE_ROWS = 5000
#: At most this many microbatches' source rows are read to label a report's rows (the
#: one it opens on first, then those of failures): a report's reads stay bounded.
LABELED_MICROBATCHES = 8
OUTCOMES = ("present", "dropped", "failed", "suppressed")
_LABEL_CHARS = 72


@dataclass
class MicrobatchView:
    """One source microbatch: committed (with its manifest) or still pending."""

    index: int
    first_source: int
    count: int
    state: str  # success | failed | pending | not_run (pending in a run that ended)
    sources: dict[str, int] = field(default_factory=dict)
    grains: dict[str, int] = field(default_factory=dict)
    elapsed_s: float | None = None
    #: Seconds from the run's start (driver timings, else the manifest's commit time).
    started_s: float | None = None
    finished_s: float | None = None
    #: The committed attempt (1: the run's; more after a repair).
    attempt: int = 1
    #: ``{port: uri}`` of the committed attempt's files (a repaired manifest's ``files``).
    files: dict[str, str] = field(default_factory=dict)
    #: ``{port: rows}``: the manifest's bounded sample of its source rows (None: older
    #: manifests, whose rows are read from their files)
    sample: dict[str, list[dict[str, Any]]] | None = None
    #: a row of consecutive microbatches ``index..last`` (None: this one only), of
    #: which ``done`` are committed (their counts and timings summed)
    last: int | None = None
    done: int | None = None

    @property
    def committed(self) -> bool:
        return self.state not in ("pending", "not_run")

    @property
    def size(self) -> int:
        """Microbatches the row stands for."""
        return 1 if self.last is None else self.last - self.index + 1

    @property
    def done_count(self) -> int:
        """Committed microbatches of the row."""
        return int(self.committed) if self.done is None else self.done

    @property
    def name(self) -> str:
        """``mb 3``, or ``mb 0-39`` for a row of several."""
        return f"mb {self.index}" if self.size == 1 else f"mb {self.index}-{self.last}"


@dataclass
class RunView:
    """Everything the report renders, JSON-like and independent of the engine."""

    run_id: str
    pipeline: str = ""
    fingerprint: str = ""
    #: running | pending | success | failed | not_started | stopped | unknown
    #: (``runs.run_state.read_run_state``)
    state: str = "unknown"
    #: The Ray job's status (``JobStatus`` value) and why, as the run's state reads it.
    job_status: str | None = None
    state_message: str | None = None
    total_sources: int = 0
    sources: dict[str, int] = field(default_factory=dict)
    grains: dict[str, int] = field(default_factory=dict)
    elapsed_s: float | None = None
    microbatches: list[MicrobatchView] = field(default_factory=list)
    #: Per-source rows ``{"source", "label", "outcome", "cause", "microbatch", "port"}``.
    rows: list[dict[str, Any]] = field(default_factory=list)
    rows_total: int = 0
    ports: list[str] = field(default_factory=list)
    #: True when commit times come from manifest modification times, not the driver.
    times_from_store: bool = False
    #: Attempt history of repaired microbatches (see :mod:`.history`).
    attempts: list[AttemptRow] = field(default_factory=list)
    #: ``(name, uri)`` of each driver log the run keeps (``<run>/logs/``), in order.
    driver_logs: list[tuple[str, str]] = field(default_factory=list)


def _label(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=repr)
    text = " ".join(text.split())
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "\u2026"


def _manifest_mtimes(store: RunStore, run_id: str) -> dict[int, datetime]:
    base = posixpath.join(store.root, *paths.manifests(run_id))
    found: dict[int, datetime] = {}
    for info in store.fs.get_file_info(pafs.FileSelector(base, allow_not_found=True)):
        index = paths.manifest_index(info.base_name)
        if index is not None and info.mtime is not None:
            found[index] = info.mtime
    return found


def _output_rows(
    store: RunStore, run_id: str, mb: MicrobatchView, port: str
) -> list[dict[str, Any]]:
    """The committed attempt's rows: a repaired manifest names its files."""
    default = store.record_uri(paths.output_file(run_id, mb.index, 1, port))
    uri = mb.files.get(port) or default  # read with the store's filesystem: its options
    table = pq.read_table(fs_path(uri), filesystem=store.fs, columns=["source", "outcome", "cause"])
    return list(table.to_pylist())


def _times(
    store: RunStore,
    run_id: str,
    views: list[MicrobatchView],
    timings: Mapping[int, Mapping[str, Any]] | None,
) -> bool:
    """Fill started_s/finished_s; returns True when they came from the store's mtimes.
    A microbatch without a timing of its own takes that of a row of microbatches
    (``last``) holding it."""
    if timings is not None:
        rows = sorted(i for i, t in timings.items() if t.get("last") is not None)
        for mb in views:
            t = timings.get(mb.index)
            if t is None and rows:
                at = rows[max(bisect.bisect_right(rows, mb.index) - 1, 0)]
                if at <= mb.index <= int(timings[at]["last"]):
                    t = timings[at]
            if t is not None and mb.committed:
                mb.started_s = float(t.get("started_s", 0.0))
                mb.finished_s = float(t.get("finished_s", 0.0))
            elif mb.committed:  # committed by an earlier driver attempt
                mb.started_s = mb.finished_s = 0.0
        return False
    mtimes = _manifest_mtimes(store, run_id)
    committed = [mb for mb in views if mb.index in mtimes]
    if not committed:
        return True
    origin = min(mtimes[mb.index].timestamp() - (mb.elapsed_s or 0.0) for mb in committed)
    for mb in committed:
        mb.finished_s = mtimes[mb.index].timestamp() - origin
        mb.started_s = max(0.0, mb.finished_s - (mb.elapsed_s or 0.0))
    return True


def load_run(
    store: RunStore,
    run_id: str,
    timings: Mapping[int, Mapping[str, Any]] | None = None,
    *,
    now: datetime | None = None,
    focus: int | None = None,
) -> RunView:
    """Read one run's plan, manifests and per-source outcomes from ``store``; its state
    as of ``now`` (see :mod:`.state`). Source rows come from the manifests' samples
    (every row of microbatch ``focus``, and of a manifest without one, from its files)."""
    view = RunView(run_id=run_id)
    plan = store.read_plan(run_id)
    manifests = {m.microbatch.index: m for m in store.manifest_records(run_id) if m.microbatch}
    descriptors = (
        plan.microbatches()
        if plan is not None
        else [m.microbatch.model_dump() for _, m in sorted(manifests.items()) if m.microbatch]
    )
    if plan is not None:
        view.pipeline, view.fingerprint = plan.pipeline, plan.fingerprint
        view.total_sources = plan.total_sources
    for d in descriptors:
        m = manifests.get(int(d["index"]))
        mb = MicrobatchView(int(d["index"]), int(d["first_source"]), int(d["count"]), "pending")
        if m is not None:
            mb.state = m.state or "success"
            mb.sources = m.sources.model_dump() if m.sources else {}
            mb.grains = m.grains.model_dump() if m.grains else {}
            mb.elapsed_s = m.elapsed_s or 0.0
            mb.attempt = m.attempt or 1
            mb.files = dict(m.files or {})
            if m.sample is not None:
                mb.sample = {k: [r.model_dump() for r in v] for k, v in m.sample.items()}
            ports = m.outputs.ports if m.outputs else None
            view.ports = view.ports or list(ports or ["out"])
            view.pipeline = view.pipeline or m.pipeline or ""
            view.fingerprint = view.fingerprint or m.fingerprint or ""
        view.microbatches.append(mb)
    view.times_from_store = _times(store, run_id, view.microbatches, timings)
    counts = dict.fromkeys(("total", *OUTCOMES), 0)
    grains = {"dispatched": 0, "retried": 0, "suppressed": 0}
    for mb in view.microbatches:
        for key in counts:
            counts[key] += mb.sources.get(key, 0)
        for key in grains:
            grains[key] += mb.grains.get(key, 0)
    view.sources, view.grains = counts, grains
    view.total_sources = view.total_sources or sum(mb.count for mb in view.microbatches)
    run = store.run_manifest_record(run_id)
    if run is not None:
        view.elapsed_s = run.elapsed_s or 0.0
    state = read_run_state(store, run_id, now=now, manifests=list(manifests.values()))
    apply_state(view, state)
    histories = {i: m.attempts or [] for i, m in manifests.items()}
    view.attempts = attempt_rows(histories, repair_records(store, run_id))
    view.driver_logs = [
        (name, driver_log_uri(store, run_id, name)) for name in driver_log_names(store, run_id)
    ]
    _load_rows(store, run_id, view, focus)
    label_rows(store, plan, view.rows, focus)
    return view


def apply_state(view: RunView, state: RunState) -> None:
    """Set the run's state; microbatches still pending in an ended run were never run."""
    view.state, view.job_status, view.state_message = state.state, state.job_status, state.message
    if state.is_terminal:
        for mb in view.microbatches:
            if mb.state == "pending":
                mb.state = "not_run"


def _load_rows(store: RunStore, run_id: str, view: RunView, focus: int | None) -> None:
    rows: list[dict[str, Any]] = []
    total = 0
    for mb in view.microbatches:
        if not mb.committed:
            continue
        total += int(mb.sources.get("total", mb.count)) * len(view.ports)
        for port in view.ports:
            sampled = mb.sample is not None and mb.index != focus
            found = (mb.sample or {}).get(port, []) if sampled else None
            for row in found if found is not None else _output_rows(store, run_id, mb, port):
                source = int(row["source"])
                rows.append(
                    {
                        "source": source,
                        "label": "",
                        "outcome": str(row["outcome"]),
                        "cause": row["cause"] or "",
                        "microbatch": mb.index,
                        "port": port,
                    }
                )
    view.rows_total = total
    if len(rows) > MAX_SOURCE_ROWS:
        bad = [r for r in rows if r["outcome"] != "present"][:MAX_SOURCE_ROWS]
        good = [r for r in rows if r["outcome"] == "present"][: MAX_SOURCE_ROWS - len(bad)]
        rows = bad + good
    rows.sort(key=lambda r: (int(r["source"]), str(r["port"])))
    view.rows = rows


def microbatch_labels(
    store: RunStore, plan: PlanRecord, index: int, sources: Collection[int] | None = None
) -> dict[int, str]:
    """``{source: label}`` of microbatch ``index`` (inline rows, else its listing only),
    of the ``sources`` given only when given."""
    first, count = plan.microbatch(index)
    wanted = range(first, first + count) if sources is None else sources
    if plan.sources is not None:
        return {s: _label(plan.sources[s]) for s in wanted if first <= s < first + count}
    columns = store.read_sources(plan, index)
    if not columns:
        return {}
    found = len(columns[0])
    one = len(columns) == 1
    return {
        s: _label(columns[0][s - first] if one else [c[s - first] for c in columns])
        for s in wanted
        if first <= s < first + found
    }


def label_rows(
    store: RunStore, plan: PlanRecord | None, rows: list[dict[str, Any]], focus: int | None
) -> None:
    """Label ``rows`` with their source rows: every row of a plan holding them inline,
    else those of at most :data:`LABELED_MICROBATCHES` microbatches (``focus``, then
    failures' first); the others keep an empty label. Only the rows' sources are
    labelled."""
    if plan is None or not rows:
        return
    if plan.sources is not None:
        chosen = sorted({int(r["microbatch"]) for r in rows})
    else:
        order = [focus] if focus is not None else []
        order += [r["microbatch"] for r in rows if r["outcome"] != "present"]
        order += [r["microbatch"] for r in rows]
        chosen = list(dict.fromkeys(int(i) for i in order if i is not None))
        chosen = chosen[:LABELED_MICROBATCHES]
    wanted: dict[int, set[int]] = {i: set() for i in chosen}
    for row in rows:
        sources = wanted.get(int(row["microbatch"]))
        if sources is not None:
            sources.add(int(row["source"]))
    labels: dict[int, str] = {}
    for index in chosen:
        labels.update(microbatch_labels(store, plan, index, wanted[index]))
    for row in rows:
        row["label"] = labels.get(int(row["source"]), "")
