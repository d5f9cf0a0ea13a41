"""One job watch: a run's Ray job status plus what its run store holds, in; one
observation, out.

The operator, both sensors and both triggers wait for the same thing, so the rule
for "is it over, and did it work" lives in the pure :func:`observe`; the thin drivers
:class:`JobWatch` (operator, sensors) only fetches the two inputs; the triggers feed
:func:`observe` from their run watcher. Reading the job is one
hook call (the hook retries transient Jobs-API errors within its budget); the
watch writes nothing (the driver records the run's state).

The rule. Watching a run: the watch ends when the job ends; the run succeeded when
the job did not report a failure (SUCCEEDED, or MISSING: the head that ran it is
gone and the manifest is the only witness left) and a run manifest exists; a caller
whose manifest may predate the job (the operator: its try may be a repair) trusts
only SUCCEEDED. A run
manifest's ``job_status`` is the status the watch read
(:func:`stamped`, the rule of :func:`common.states.with_job_status`). Watching one
microbatch: it ends as soon as that microbatch's manifest commits, or when the job
ends without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.common.states import JobStatus, with_job_status

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow_provider_rayorch.runs.records import MicrobatchManifest, RunManifest
    from airflow_provider_rayorch.runs.store import RunStore

__all__ = ["JobObservation", "JobWatch", "StoreFacts", "job_reading", "observe", "stamped"]

#: What a job read returns: Ray's job info (a mapping), a status, or None (unknown job).
JobRead = Mapping[str, Any] | JobStatus | str | None


@dataclass(frozen=True)
class StoreFacts:
    """What the run store says: committed microbatches (None: not counted) and the
    awaited manifest (the run's, or one microbatch's; None: not written yet)."""

    committed: int | None = None
    manifest: MicrobatchManifest | RunManifest | None = None


@dataclass(frozen=True)
class JobObservation:
    """One look at a run's job.

    :ivar status: the job's status (None: no job to watch).
    :ivar committed: microbatches committed so far (None: not counted).
    :ivar manifest: the awaited manifest record as read; a run's carries its ``job_status``.
    :ivar ended: nothing more to wait for.
    :ivar succeeded: ended, and the awaited work is done (see the module's rule).
    :ivar message: Ray's word on the job (why it ended), ``""`` if none.
    """

    status: JobStatus | None
    committed: int | None
    manifest: MicrobatchManifest | RunManifest | None
    ended: bool
    succeeded: bool = False
    message: str = ""


def job_reading(raw: JobRead, job_id: str) -> tuple[JobStatus, str]:
    """A job read as ``(status, Ray's message)``; None means Ray does not know it."""
    if raw is None:
        return JobStatus.MISSING, f"the cluster does not know job {job_id}"
    if isinstance(raw, Mapping):
        return JobStatus.parse(raw.get("status")), str(raw.get("message") or "")
    return JobStatus.parse(raw), ""


def stamped(
    manifest: MicrobatchManifest | RunManifest, status: JobStatus | None = None
) -> MicrobatchManifest | RunManifest:
    """The manifest record with its ``job_status``: its own, else ``status``, else
    ``UNKNOWN`` (:func:`common.states.with_job_status`)."""
    job_status = with_job_status({"job_status": manifest.job_status}, status)["job_status"]
    if job_status == manifest.job_status:
        return manifest
    return manifest.model_copy(update={"job_status": job_status})


def observe(
    status: JobStatus | None,
    facts: StoreFacts,
    *,
    message: str = "",
    microbatch: bool = False,
    job_must_succeed: bool = False,
) -> JobObservation:
    """The observation for a job ``status`` and the store's ``facts`` (pure).
    ``job_must_succeed``: only Ray's SUCCEEDED completes a run (a caller whose run
    manifest may predate the job, as a repair's does)."""
    committed = facts.committed
    if microbatch:
        manifest = facts.manifest
        done = manifest is not None
        ended = done or (status is not None and status.is_terminal)
        return JobObservation(status, committed, manifest, ended, done, "" if done else message)
    if status is None or status.is_active:
        return JobObservation(status, committed, None, False, False, message)
    manifest = None if facts.manifest is None else stamped(facts.manifest, status)
    trusted = (
        (JobStatus.SUCCEEDED,) if job_must_succeed else (JobStatus.SUCCEEDED, JobStatus.MISSING)
    )
    ok = manifest is not None and status in trusted
    return JobObservation(status, committed, manifest, True, ok, message)


@dataclass
class JobWatch:
    """The drivers of :func:`observe` for one run (and maybe one microbatch).

    :param read_job: reads the job once (a hook's ``get_job_info``/``get_job_status``);
        None: no job to watch.
    :param index: watch this microbatch's manifest instead of the run's.
    :param count_commits: count committed microbatches on every look (for the log).
    """

    store: RunStore
    run_id: str
    job_id: str | None
    read_job: Callable[[], Any] | None
    interval: float
    log: Any = None
    index: int | None = None
    count_commits: bool = False
    #: see :func:`observe`
    job_must_succeed: bool = False
    #: the last job read as it came (Ray's job info holds the driver's exit code)
    last_read: Any = None

    def _manifest(self) -> MicrobatchManifest | RunManifest | None:
        if self.index is not None:
            return self.store.manifest_record(self.run_id, self.index)
        return self.store.run_manifest_record(self.run_id)

    def _facts(
        self, status: JobStatus | None, early: MicrobatchManifest | RunManifest | None
    ) -> StoreFacts:
        committed = len(self.store.committed(self.run_id)) if self.count_commits else None
        if early is not None:
            return StoreFacts(committed, early)
        ended = status is None or status.is_terminal
        return StoreFacts(committed, self._manifest() if ended else None)

    def _after_read(self, raw: Any) -> tuple[JobStatus, str]:
        self.last_read = raw
        return job_reading(raw, str(self.job_id))

    def look(self) -> JobObservation:
        """One look (sync): the microbatch's manifest first, then the job, then the store."""
        early = self._manifest() if self.index is not None else None
        if early is not None or self.read_job is None:
            return observe(None, self._facts(None, early), microbatch=self.index is not None)
        raw = self.read_job()
        status, message = self._after_read(raw)
        facts = self._facts(status, None)
        return observe(
            status,
            facts,
            message=message,
            microbatch=self.index is not None,
            job_must_succeed=self.job_must_succeed,
        )
