"""A microbatch task's resume: the run's newest Ray job ended before the task's
microbatch committed, so one new job runs the microbatches not committed yet.

Who may resume is :func:`..common.repair.may_resume`; which job is the run's newest,
and which id its successor gets, is :mod:`..runs.resumes`. Every task that finds the
same job ended names the same successor and submits the same submission id, which
Ray takes once (the hook's submit is idempotent by it), so whichever task notices
first starts the job and the others attach to it. The new job runs the driver in its
resume mode, which is its plain mode: it skips every committed microbatch and writes
the run manifest at the end. Like a repair job, it gets the connection's
``runtime_env`` and names its OpenLineage parent, the task that resumes
(:mod:`..lineage.parent`).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.common.liveness import record_submitted
from airflow_provider_rayorch.common.repair import may_resume, try_owner
from airflow_provider_rayorch.common.states import JobStatus
from airflow_provider_rayorch.lineage.parent import with_parent_run
from airflow_provider_rayorch.runs.resumes import newest_job, read_resume, record_resume

if TYPE_CHECKING:
    import logging
    from collections.abc import Callable

    from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["RunResume", "resume_if_ended"]


def resume_if_ended(sensor: Any, context: Any) -> str | None:
    """The job a microbatch sensor watches: the run's newest job, or, on a try that may
    resume (:func:`may_resume`) when that job has ended, the job that resumes the run.
    None when the submit task pushed no job."""
    ti = context["ti"]
    first = sensor.first_job
    if first is None or not may_resume(ti):
        return sensor._job
    return RunResume(
        hook=sensor.hook,
        store=sensor._store(),
        run_id=sensor.run_id,
        first_job=first,
        owner=try_owner(ti),
        interval=float(sensor.poke_interval),
        log=sensor.log,
        ti=ti,
        needed=lambda: sensor._store().manifest_record(sensor.run_id, sensor.index) is None,
    ).job_to_watch()


class RunResume:
    """The resume of run ``run_id`` by one task try (``owner``), for a run submitted
    as job ``first_job``; ``needed()`` says whether the task still waits for a commit
    (read again once the newest job is seen ended: it may have committed just before)."""

    def __init__(
        self,
        *,
        hook: RayOrchHook,
        store: RunStore,
        run_id: str,
        first_job: str,
        owner: str,
        interval: float,
        log: logging.Logger | Any,
        ti: Any = None,
        needed: Callable[[], bool] = lambda: True,
    ) -> None:
        self.hook, self.store, self.run_id, self.first_job = hook, store, run_id, first_job
        self.owner, self.interval, self.log, self.ti = owner, max(float(interval), 0.05), log, ti
        self.needed = needed

    def job_to_watch(self) -> str:
        """The run's job to watch.

        The newest job when it is active; else its successor, submitted (or attached
        to, when another task submitted it first). A recorded successor that Ray does
        not know is submitted under its own id. A try resumes at most once: when the
        newest job is the one it started, it is watched as it is (ended: the try fails).
        """
        job_id = newest_job(self.store, self.run_id, self.first_job)
        info = self.hook.get_job_info(job_id)
        status = JobStatus.MISSING if info is None else JobStatus.parse(info.get("status"))
        if status.is_active or not self.needed():
            return job_id
        if status is JobStatus.MISSING and job_id != self.first_job:
            return self._submit(job_id, after=None, why="Ray does not know it")
        before = self._before(job_id)
        record = None if before is None else read_resume(self.store, self.run_id, before)
        if record is not None and record.owner == self.owner:
            return job_id  # this try's own resume ended too: no second one
        said = str((info or {}).get("message") or "no message").strip().splitlines()
        why = f"{status}: {said[0][:300] if said else 'no message'}"
        successor = record_resume(self.store, self.run_id, job_id, self.owner).job_id
        return self._submit(successor, after=job_id, why=why)

    def _before(self, job_id: str) -> str | None:
        """The job that ``job_id`` took over from, None for the first job."""
        previous, current = None, self.first_job
        while current != job_id:
            record = read_resume(self.store, self.run_id, current)
            if record is None:
                return None
            previous, current = current, record.job_id
        return previous

    def _submit(self, job_id: str, *, after: str | None, why: str) -> str:
        from airflow_provider_rayorch.sensors._repair import DRIVER_MODULE

        args = ["python", "-m", DRIVER_MODULE, "--run-store", self.store.uri]
        args += ["--run-id", self.run_id]
        metadata = {"rayorch_run_id": self.run_id, "rayorch_resumes": after or job_id}
        if self.ti is not None:
            metadata.update(
                airflow_dag_id=str(self.ti.dag_id),
                airflow_task_id=str(self.ti.task_id),
                airflow_run_id=str(self.ti.run_id),
                airflow_map_index=str(getattr(self.ti, "map_index", -1)),
            )
        if after is None:
            self.log.info(
                "Run %s resumes with job %s, recorded but unknown to Ray (%s): submitting it",
                self.run_id,
                job_id,
                why,
            )
        else:
            self.log.info(
                "Ray job %s of run %s ended %s before the run was done: resuming the run with "
                "job %s, which runs the microbatches not committed yet (committed ones are "
                "kept); a task that finds the same job ended attaches to it",
                after,
                self.run_id,
                why,
                job_id,
            )
        # idempotent by ``job_id``: a task that submits it second finds the first's job
        submitted = self.hook.submit_job(
            shlex.join(args),
            submission_id=job_id,
            runtime_env=with_parent_run(None, self.ti) or None,  # OpenLineage parent
            metadata=metadata,
        )
        record_submitted(self.store, self.run_id, str(submitted), log=self.log)
        return str(submitted)
