"""The Ray job entrypoint: run one stored plan against a run store.

::

    python -m airflow_provider_rayorch.job --run-store URI --run-id ID

The driver loads the plan record, imports ``pipeline`` ("pkg.module:Factory"),
builds and compiles it, and refuses to run (exit code 3) when the compiled
fingerprint differs from the stored one: the code on this machine is not the code
the plan was made from, and outputs of two plans are never mixed. It then streams
the source microbatches that are not committed yet, writes each one's outputs and
then its manifest, and finally the run manifest. Started again for the same run it
skips every committed microbatch: nothing is recomputed or duplicated.

Progress is printed for people as one line per committed microbatch
(``microbatch 3/6 committed: 8 sources, 8 present, 0 failed, 0 suppressed (12.4 s,
41 pages/s)``) and, while no microbatch commits for ``PROGRESS_EVERY_S``, a
throughput line (``running: 2/6 microbatches committed, ...``); for programs as
``RAYORCH_EVENT {json}`` lines (task logs show those at DEBUG only), among them the
phases of its start (:mod:`.driver_events`); a fatal problem
as one ``RAYORCH_ERROR {json}`` line before a non-zero exit. :func:`main` keeps
a copy of all it prints, and of a crash's traceback, in the run store
(``<run>/logs/driver-<n>.log``, :mod:`.driver_log`).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.rayorch.errors import DriverError
from airflow_provider_rayorch.runs import engine_reads
from airflow_provider_rayorch.runs.aggregate import RunAggregate
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.commit import commit_microbatch, root_name
from airflow_provider_rayorch.runs.driver_end import record_stopped, recording_end
from airflow_provider_rayorch.runs.driver_events import StartPhase, start_phase
from airflow_provider_rayorch.runs.driver_events import emit as _emit
from airflow_provider_rayorch.runs.driver_log import keep_driver_log
from airflow_provider_rayorch.runs.exit_codes import EXIT_PLAN_CHANGED
from airflow_provider_rayorch.runs.live_reports import LiveReports, ReportWriter, report_job
from airflow_provider_rayorch.runs.pipeline_load import build_pipeline, plan_executor
from airflow_provider_rayorch.runs.records import SourceCounts, microbatch_count
from airflow_provider_rayorch.runs.run_manifest import write_run_manifest
from airflow_provider_rayorch.runs.run_state import DriverState
from airflow_provider_rayorch.runs.secrets import (
    run_store_options_from_env,
)
from airflow_provider_rayorch.runs.sources import source_columns
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from airflow_provider_rayorch.runs.records import MicrobatchManifest

__all__ = [
    "DriverError",
    "ProgressTicker",
    "ReportWriter",
    "main",
    "microbatch_line",
    "repair_plan",
    "run_plan",
]

#: Seconds between two refreshes of the run report while a run goes on.
REPORT_EVERY_S = 10.0
#: Seconds the end of a run waits for its final report (after a report still being written).
FINAL_REPORT_WAIT_S = 120.0
#: Seconds without a commit after which a throughput line is printed (and again after).
PROGRESS_EVERY_S = 30.0


def _say(line: str) -> None:
    print(line, flush=True)


def _per_second(count: float, seconds: float) -> str:
    rate = count / seconds if seconds > 0 else 0.0
    return f"{rate:.1f}" if rate < 10 else f"{rate:.0f}"


def microbatch_line(manifest: MicrobatchManifest, total: int, elapsed_s: float) -> str:
    """``microbatch 3/6 committed: 8 sources, 8 present, 0 failed, 0 suppressed
    (12.4 s, 41 pages/s)``: the rate counts the microbatch's most numerous entities."""
    src = manifest.sources or SourceCounts(total=0, present=0, dropped=0, failed=0, suppressed=0)
    index = 0 if manifest.microbatch is None else manifest.microbatch.index
    text = (
        f"microbatch {index + 1}/{total} committed: {src.total} sources, "
        f"{src.present} present, {src.failed} failed, {src.suppressed} suppressed"
    )
    if src.dropped:
        text += f", {src.dropped} dropped"
    entities = dict(manifest.entities or {})
    name, count = max(entities.items(), key=lambda kv: kv[1], default=("source", src.total))
    unit = name if name.endswith("s") else f"{name}s"
    return f"{text} ({elapsed_s:.1f} s, {_per_second(count, elapsed_s)} {unit}/s)"


class ProgressTicker:
    """Prints a throughput line while no microbatch commits for ``every_s`` seconds.

    The engine's core is single-threaded and is never iterated from the ticker's own
    thread (``start()``): the ticker reads ``count``, a counter the dispatching thread
    publishes (``Executor.grains_dispatched``), or else what the driver thread hands it
    (``observe()``, at commits), so a line never races the dispatch loop, and its delta
    never goes negative.
    """

    def __init__(
        self,
        total: int,
        every_s: float | None = None,
        *,
        done: int = 0,
        count: Callable[[], int] | None = None,
    ) -> None:
        self.total = total
        self._count = count
        self.every_s = PROGRESS_EVERY_S if every_s is None else every_s
        self._lock = threading.Lock()
        self.done = done
        self._grains = self._last_grains = 0
        self._started = self._last_commit = self._last_tick = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def observe(self, grains_dispatched: int) -> None:
        """The run's grains dispatched so far (read by the driver thread)."""
        with self._lock:
            self._grains = int(grains_dispatched)

    def committed(self) -> None:
        with self._lock:
            self.done += 1
            self._last_commit = time.monotonic()

    def tick(self) -> str:
        now = time.monotonic()
        if self._count is not None:
            self.observe(self._count())
        with self._lock:
            done, grains = self.done, self._grains
            delta = max(grains - self._last_grains, 0)
            window = max(now - self._last_tick, 1e-9)
            quiet = now - self._last_commit
            self._last_grains, self._last_tick = max(grains, self._last_grains), now
        line = (
            f"running: {done}/{self.total} microbatches committed, {grains} grains "
            f"dispatched (+{delta} since the last line, {_per_second(delta, window)}/s), "
            f"no commit for {quiet:.0f} s, "
            f"{now - self._started:.0f} s elapsed"
        )
        _say(line)
        return line

    def _loop(self) -> None:
        while not self._stop.wait(min(self.every_s, 5.0)):
            with self._lock:
                quiet = time.monotonic() - max(self._last_commit, self._last_tick)
            if quiet >= self.every_s:
                self.tick()

    def start(self) -> ProgressTicker:
        self._thread = threading.Thread(target=self._loop, name="rayorch-progress", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def _write_report(
    report: ReportWriter | None,
    store: RunStore,
    run_id: str,
    executor: Any,
    timings: list[Any] | None,
) -> None:
    """Store the run's report next to its manifests (best effort, never fatal)."""
    if report is not None:
        report_job(report, store, run_id, executor, timings)()


def run_plan(
    store: RunStore,
    run_id: str,
    *,
    address: str | None = None,
    report: ReportWriter | None = None,
    on_commit: Callable[[], None] | None = None,
    state: DriverState | None = None,
) -> dict[str, Any]:
    """Run (or resume) one stored plan; returns the run lineage summary. ``on_commit``
    is called after each commit's lines are printed (the driver's log keeps them).
    ``state`` writes the run-state record (default: one of its own, which also
    records a failure before re-raising it)."""
    if state is not None:
        return _run_plan(store, run_id, address, report, on_commit, state)
    own = DriverState(store, run_id)
    with recording_end(own):
        return _run_plan(store, run_id, address, report, on_commit, own)


def _run_plan(
    store: RunStore,
    run_id: str,
    address: str | None,
    report: ReportWriter | None,
    on_commit: Callable[[], None] | None,
    state: DriverState,
) -> dict[str, Any]:
    started = time.monotonic()
    plan = store.read_plan(run_id)
    if plan is None:
        raise DriverError(f"no plan record for run {run_id!r} in {store.uri}")
    pipeline, compiled = build_pipeline(plan)
    start_phase(StartPhase.IMPORTED)
    fingerprint = str(compiled.fingerprint)
    if fingerprint != plan.fingerprint:
        raise DriverError(
            f"run {run_id!r}: the pipeline compiled here has fingerprint {fingerprint}, the "
            f"stored plan has {plan.fingerprint}; refusing to mix outputs of two plans. Ship "
            "the same pipeline code to the cluster, or start a new run.",
            EXIT_PLAN_CHANGED,
        )
    committed = store.committed(run_id)
    total = microbatch_count(plan.total_sources, plan.batch_size)
    pending = sum(i not in committed for i in range(total))
    state.started(len(committed), total)
    # counts, not lists: a line whose size does not grow with the run
    _emit(
        "EVENT",
        {"event": "start", "run_id": run_id, "committed": len(committed), "pending": pending},
    )
    executor: Any = None
    reports: LiveReports | None = None
    # the live report's and the run manifest's data, kept as commits come (earlier
    # commits read once here, one at a time)
    aggregate = RunAggregate.of(plan, _manifests(store, run_id, committed))
    if pending:
        store.clear_run_manifest(run_id)
        if report is not None:
            reports = LiveReports(REPORT_EVERY_S).start()
        with plan_executor(plan, pipeline, address) as executor:
            start_phase(StartPhase.POOLS)
            stream = executor.stream(
                *source_columns(store, plan),
                input_batch_size=plan.batch_size,
                max_active_input_batches=plan.max_active_input_batches,
                skip_microbatches=committed,
            )
            last_commit = time.monotonic()
            ticker = ProgressTicker(
                total, done=len(committed), count=getattr(executor, "grains_dispatched", None)
            ).start()
            root = root_name(compiled)
            dispatched: float | None = None
            try:
                for mb in stream:
                    if mb.index in committed:
                        continue
                    if dispatched is None:
                        dispatched = engine_reads.first_dispatch_at(executor)
                        start_phase(StartPhase.DISPATCH, dispatched)
                    manifest = commit_microbatch(store, plan, mb, root)
                    aggregate.add(manifest)
                    state.committed()
                    engine_reads.add_timing(aggregate, mb)
                    engine_reads.forget_timeline(executor)
                    ticker.observe(engine_reads.grains_dispatched(executor))
                    ticker.committed()
                    elapsed = engine_reads.microbatch_elapsed(mb, last_commit)
                    _say(microbatch_line(manifest, total, elapsed))
                    last_commit = time.monotonic()
                    summary = plain(manifest)
                    _emit(
                        "EVENT",
                        {
                            "event": "microbatch",
                            "index": mb.index,
                            "state": summary["state"],
                            "sources": summary["sources"],
                        },
                    )
                    if on_commit is not None:
                        on_commit()
                    if report is not None and reports is not None and reports.due():
                        # a live report, written on its own thread: the loop goes on
                        reports.offer(
                            report_job(
                                report, store, run_id, executor, aggregate.timings(), aggregate
                            )
                        )
            finally:
                ticker.stop()
                final = None
                if report is not None and reports is not None:
                    final = report_job(
                        report, store, run_id, executor, aggregate.timings(), aggregate
                    )
    result = _write_run_manifest(store, plan, run_id, started, aggregate)
    state.ended("succeeded", _verdict_line(result))
    if reports is not None and not reports.close(final, FINAL_REPORT_WAIT_S):
        _emit("EVENT", {"event": "report_failed", "error": "the final report did not finish"})
    _emit(
        "EVENT",
        {"event": "end", "run_id": run_id, "state": result["state"], "sources": result["sources"]},
    )
    return result


def repair_plan(
    store: RunStore,
    run_id: str,
    which: str,
    *,
    address: str | None = None,
    job_id: str | None = None,
    write_run_manifest: bool = False,
    report: ReportWriter | None = None,
) -> list[dict[str, Any]]:
    """Repair mode (see :mod:`.repair`): ``which`` is ``"all"`` or ``"3,5"``."""
    from airflow_provider_rayorch.runs.repair import repair_microbatches

    started = time.monotonic()
    plan = store.read_plan(run_id)
    if plan is None:
        raise DriverError(f"no plan record for run {run_id!r} in {store.uri}")
    try:
        indices = None if which == "all" else [int(i) for i in which.split(",") if i.strip()]
    except ValueError:
        raise DriverError(f"--repair {which!r}: give 'all' or microbatch indices") from None
    pipeline, compiled = build_pipeline(plan)
    manifests = repair_microbatches(
        store,
        plan,
        pipeline,
        compiled,
        indices,
        address=address,
        job_id=job_id,
        say=_say,
    )
    for manifest in manifests:
        _emit(
            "EVENT",
            {
                "event": "repaired",
                "index": manifest["microbatch"]["index"],
                "attempt": manifest["attempt"],
                "state": manifest["state"],
            },
        )
    if write_run_manifest:
        _write_run_manifest(store, plan, run_id, started)
    if manifests:  # the stored report must show the repaired state, not the first attempt
        _write_report(report, store, run_id, None, None)
    return manifests


def main(
    argv: Sequence[str] | None = None,
    *,
    report: ReportWriter | None = None,
    started_at: float | None = None,
) -> int:
    """Parse the job's arguments and run (or repair) the stored plan; the exit code.
    ``started_at``: when the driver process began (epoch seconds; default: now)."""
    parser = argparse.ArgumentParser(prog="airflow_provider_rayorch.job")
    parser.add_argument("--run-store", required=True, help="run store URI")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--address", default=None, help="Ray address (default: the job's)")
    parser.add_argument(
        "--repair",
        default=None,
        help="repair mode: 'all' or comma-separated microbatch indices (see repair.py)",
    )
    parser.add_argument(
        "--write-run-manifest",
        action="store_true",
        help="with --repair: also rewrite the run manifest (a whole-run repair)",
    )
    parser.add_argument("--job-id", default=None, help="with --repair: recorded in the history")
    args = parser.parse_args(argv)
    store = RunStore(args.run_store, run_store_options_from_env())
    # the run's state is the run driver's; a repair keeps its own records (.attempts)
    state = DriverState(store, args.run_id, job_id=args.job_id) if args.repair is None else None
    argv = sys.argv[1:] if argv is None else argv
    on_stop = None if state is None else (lambda: record_stopped(state))
    with keep_driver_log(store, args.run_id, argv, on_stop=on_stop) as log, recording_end(state):
        start_phase(StartPhase.PROCESS, started_at)
        try:
            # Inside a Ray job RAY_ADDRESS names the cluster; else the engine starts a local Ray.
            address = args.address or os.environ.get("RAY_ADDRESS") or None
            if args.repair is not None:
                repair_plan(
                    store,
                    args.run_id,
                    args.repair,
                    address=address,
                    job_id=args.job_id,
                    write_run_manifest=args.write_run_manifest,
                    report=report,
                )
            else:
                assert state is not None
                state.started(0, 0, "the driver started")
                run_plan(
                    store,
                    args.run_id,
                    address=address,
                    report=report,
                    on_commit=log.copy_soon,
                    state=state,
                )
        except DriverError as exc:
            _emit("ERROR", {"message": str(exc), "exit_code": exc.exit_code})
            if state is not None:
                state.ended("failed", str(exc))
            return exc.exit_code
    return 0


def _verdict_line(result: dict[str, Any]) -> str:
    src = result["sources"]
    return (
        f"{src['total']} sources: {src['present']} present, {src['dropped']} dropped, "
        f"{src['failed']} failed, {src['suppressed']} suppressed ({result['state']})"
    )


def _write_run_manifest(
    store: RunStore,
    plan: PlanRecord,
    run_id: str,
    started: float,
    aggregate: RunAggregate | None = None,
) -> dict[str, Any]:
    """Sum the committed microbatch manifests (``aggregate``'s sum of them, else read
    back) into the run manifest and write it."""
    return write_run_manifest(
        store,
        run_id,
        elapsed_s=time.monotonic() - started,
        pipeline=plan.pipeline,
        fingerprint=plan.fingerprint,
        max_failed_ratio=plan.max_failed_ratio,
        aggregate=aggregate,
    )


def _manifests(
    store: RunStore, run_id: str, committed: frozenset[int]
) -> Iterator[MicrobatchManifest]:
    """The committed manifests, read one at a time (none held after it is summed)."""
    for index in sorted(committed):
        manifest = store.manifest_record(run_id, index)
        if manifest is not None:
            yield manifest
