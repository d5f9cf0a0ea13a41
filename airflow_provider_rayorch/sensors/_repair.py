"""A microbatch task's repair try: wait for the run's job, take the run's repair lease,
submit the driver's repair job, wait for it, and record every step in the run store.

The repair job's id goes to the run store's repair record (not only to XCom), so
the ``run`` task finds it on whatever head runs it: clearing pulls in the loopback
head's setup, which comes up on a new address, while ``run`` still holds the first
job's id. Waiting happens in the worker (the repair try is not deferred). Like the
run's own job, a repair job learns its parent OpenLineage run through its
``runtime_env.env_vars`` (:mod:`..lineage.parent`): the microbatch task that repairs.
"""

from __future__ import annotations

import shlex
import time
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.common.driver_exit import error_from
from airflow_provider_rayorch.common.job_watch import JobWatch
from airflow_provider_rayorch.common.repair import RepairMode, should_repair, try_owner
from airflow_provider_rayorch.common.run_ids import submission_id
from airflow_provider_rayorch.common.states import SUMMARY_KEY, JobStatus
from airflow_provider_rayorch.exceptions import (
    RayOrchAirflowError,
    RayOrchJobFailed,
    RayOrchPlanChanged,
)
from airflow_provider_rayorch.lineage.parent import with_parent_run
from airflow_provider_rayorch.runs.attempts import REPAIR_ACTIVE, repair_records, write_repair
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.lease import RepairLease

if TYPE_CHECKING:
    import logging
    from collections.abc import Callable, Mapping

    from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
    from airflow_provider_rayorch.runs.records import MicrobatchManifest
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = [
    "DRIVER_MODULE",
    "MicrobatchRepair",
    "has_failed",
    "push_failed",
    "repair_if_cleared",
    "repairs_pending",
    "rewrite_run_manifest",
]

DRIVER_MODULE = "airflow_provider_rayorch.job"


def push_failed(context: Any, summary: Mapping[str, Any]) -> None:
    """Push a summary the task fails with (its XCom shows what was judged)."""
    ti = context["ti"]
    ti.xcom_push(key=SUMMARY_KEY, value=dict(summary))
    ti.xcom_push(key="return_value", value=dict(summary))


def has_failed(manifest: MicrobatchManifest | None) -> bool:
    """The committed microbatch has FAILED or SUPPRESSED sources."""
    sources = None if manifest is None else manifest.sources
    return sources is not None and sources.failed + sources.suppressed > 0


def repair_if_cleared(sensor: Any, context: Any) -> MicrobatchManifest | None:
    """A microbatch sensor's repair try: when its try repairs (``should_repair``) and
    its committed microbatch has failed sources, repair them and return the new manifest
    (None: not a repair try, or nothing to repair)."""
    ti = context["ti"]
    if not should_repair(RepairMode(sensor.repair), ti, sensor.retries):
        return None
    store, run_id, index = sensor._store(), sensor.run_id, sensor.index
    if not has_failed(store.manifest_record(run_id, index)):
        return None
    repair = MicrobatchRepair(
        hook=sensor.hook,
        store=store,
        run_id=run_id,
        index=index,
        owner=try_owner(ti),
        interval=float(sensor.poke_interval),
        log=sensor.log,
        deadline_s=float(sensor.timeout),
        ti=ti,
    )
    sensor.log.info(
        "Try %s follows a manual clear (repair=%r): repairing the failed and suppressed "
        "sources of microbatch %d; PRESENT outputs are kept",
        ti.try_number,
        sensor.repair,
        index,
    )
    repair.wait_for_job(sensor._job)
    try:
        repair.acquire()
        manifest = store.manifest_record(run_id, index)  # again, under the lease
        if manifest is None or not has_failed(manifest):
            return manifest
        attempt = (manifest.attempt or 1) + 1
        try:
            return repair.run(attempt, int(ti.try_number))
        except Exception:
            push_failed(context, plain(manifest))  # the XCom still shows the committed state
            raise
    finally:
        repair.release()


class MicrobatchRepair:
    """One repair of microbatch ``index`` of ``run_id`` (see the module docstring).

    Every wait (for a job, for the lease) is a look, then a pause of ``interval``
    (``sleep``), until the look says it is over; past ``deadline_s`` the repair fails
    (:meth:`_pause`). A job is looked at through the job watch (:class:`JobWatch`)."""

    def __init__(
        self,
        *,
        hook: RayOrchHook,
        store: RunStore,
        run_id: str,
        index: int,
        owner: str,
        interval: float,
        log: logging.Logger | Any,
        deadline_s: float,
        ti: Any = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.hook, self.store, self.run_id, self.index = hook, store, run_id, index
        self.ti = ti  # the repairing task: the repair job's OpenLineage parent
        self.owner, self.interval, self.log = owner, max(float(interval), 0.05), log
        self.deadline = time.monotonic() + float(deadline_s)
        self.sleep = sleep
        self.lease = RepairLease(store, run_id, owner)

    def _pause(self, what: str) -> None:
        """Sleep one interval before the next look; past the deadline, fail naming ``what``."""
        if time.monotonic() > self.deadline:
            raise RayOrchJobFailed(f"repair of microbatch {self.index}: gave up waiting {what}")
        self.sleep(self.interval)

    def _until_ended(self, job_id: str, what: str, *, renew: bool = False) -> JobStatus:
        """Wait until job ``job_id`` (``what``: how the log names it) has ended; its
        status then. ``renew``: renew the lease between looks (this try holds it)."""
        hook = self.hook
        watch = JobWatch(
            store=self.store,
            run_id=self.run_id,
            job_id=job_id,
            read_job=lambda: hook.get_job_status(job_id),
            interval=self.interval,
            log=self.log,
        )
        while not (seen := watch.look()).ended:
            if renew:
                self.lease.renew()
            self.log.info("Repair waits for %s %s (%s) to end", what, job_id, seen.status)
            self._pause(f"for {what} {job_id}")
        return seen.status or JobStatus.MISSING

    def wait_for_job(self, job_id: str | None) -> None:
        """Wait until the run's (first) job has ended: a repair never races it."""
        if job_id:
            self._until_ended(job_id, "Ray job")

    def acquire(self) -> None:
        """Take the run's repair lease (two cleared microbatches never race), then wait
        for a repair job whose holder let its lease expire (a killed task's job may
        still be running)."""
        while not self.lease.acquire():
            held = self.lease.held()
            holder = None if held is None else held.owner
            self.log.info("Repair waits for the run's repair lease, held by %s", holder)
            self._pause(f"for the repair lease held by {holder}")
        for record in repair_records(self.store, self.run_id):
            if record.status == REPAIR_ACTIVE and record.job_id:
                self._until_ended(record.job_id, "the earlier repair job", renew=True)

    def run(self, attempt: int, try_number: int) -> MicrobatchManifest:
        """Submit the repair job, wait for it, return the new manifest."""
        sid = f"{submission_id(self.run_id, try_number)}-mb{self.index}-a{attempt}"
        if self.hook.get_job_info(sid):
            sid = f"{sid}-{int(time.time())}"  # Ray refuses to reuse a submission id
        args = [
            "python", "-m", DRIVER_MODULE, "--run-store", self.store.uri, "--run-id",
            self.run_id, "--repair", str(self.index), "--job-id", sid,
        ]  # fmt: skip
        write_repair(
            self.store, self.run_id, self.index, attempt=attempt, job_id=None,
            status=REPAIR_ACTIVE, owner=self.owner,
        )  # fmt: skip
        try:  # idempotent by ``sid``: a submit without an answer is sent again
            job_id = self.hook.submit_job(
                shlex.join(args),
                submission_id=sid,
                runtime_env=with_parent_run(None, self.ti) or None,  # OpenLineage parent
                metadata={"rayorch_run_id": self.run_id, "rayorch_repair": str(self.index)},
            )
        except Exception as exc:
            self._record("failed", None, attempt, f"submit failed: {exc}")
            raise
        write_repair(
            self.store, self.run_id, self.index, attempt=attempt, job_id=job_id,
            status=REPAIR_ACTIVE, owner=self.owner,
        )  # fmt: skip
        self.log.info(
            "Submitted repair job %s for microbatch %d (attempt %d)", job_id, self.index, attempt
        )
        status = self._until_ended(job_id, "repair job", renew=True)
        manifest = self.store.manifest_record(self.run_id, self.index)
        if status is JobStatus.SUCCEEDED and manifest is not None and manifest.attempt == attempt:
            self._record("committed", job_id, attempt, None)
            return manifest
        error = self._job_error(job_id, status)
        kind = "refused" if isinstance(error, RayOrchPlanChanged) else "failed"
        self._record(kind, job_id, attempt, str(error))
        raise error

    def _job_error(self, job_id: str, status: JobStatus) -> RayOrchAirflowError:
        try:
            logs = self.hook.get_job_logs(job_id)
        except Exception:
            logs = ""
        error = error_from(logs)
        if error is not None:
            return error
        return RayOrchJobFailed(
            f"repair job {job_id} of microbatch {self.index} ended {status} without committing "
            "a new attempt; see the job's log"
        )

    def _record(self, status: str, job_id: str | None, attempt: int, message: str | None) -> None:
        write_repair(
            self.store, self.run_id, self.index, attempt=attempt, job_id=job_id,
            status=status, owner=self.owner, message=message,
        )  # fmt: skip
        if status != "committed":  # a committed repair's driver rewrote the report itself
            self._rewrite_report()

    def _rewrite_report(self) -> None:
        """Store a report that names this refused or failed repair (best effort: the
        plugin renders one from the store anyway when the stored one is older)."""
        try:
            from airflow_provider_rayorch.reports.writer import write_run_report

            write_run_report(self.store, self.run_id)
        except Exception as exc:  # a report must never hide the repair's error
            self.log.warning("could not rewrite the report of run %s: %s", self.run_id, exc)

    def release(self) -> None:
        self.lease.release()


def repairs_pending(store: RunStore, run_id: str, job_status: Any) -> list[int]:
    """Microbatches whose repair may still write: a ``running`` record whose job is
    active (``job_status(job_id)``), not submitted yet, or whose lease is still held."""
    lease = RepairLease(store, run_id, owner="run task").held()
    held = lease is not None and lease.expires > time.time()
    pending = []
    for record in repair_records(store, run_id):
        if record.status != REPAIR_ACTIVE:
            continue
        job_id = record.job_id
        if held or (job_id and JobStatus.parse(job_status(job_id)).is_active):
            pending.append(record.index)
    return pending


def rewrite_run_manifest(store: RunStore, run_id: str, max_failed_ratio: float) -> None:
    """The run task alone rewrites a repaired run's manifest, through the run layer's
    one writer of it (:mod:`airflow_provider_rayorch.runs.run_manifest`)."""
    from airflow_provider_rayorch.runs.run_manifest import rewrite_repaired_run_manifest

    rewrite_repaired_run_manifest(store, run_id, max_failed_ratio)
