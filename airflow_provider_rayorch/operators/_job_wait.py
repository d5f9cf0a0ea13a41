"""The operator's wait for its Ray job: the one job watch in a worker, the job's log
relayed to the task log as it grows (its run events wake the wait: a commit, the
run's end), and the task's error when the job did not complete the run (the driver's
error line, else its exit code, else Ray's word)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.common.driver_exit import driver_exit_error, error_from, exit_code
from airflow_provider_rayorch.common.job_watch import JobObservation, JobWatch
from airflow_provider_rayorch.common.log_relay import (
    STREAM_CLOSE_WAIT_S,
    LineRelay,
    LogFollower,
)
from airflow_provider_rayorch.common.polling import EndPoll
from airflow_provider_rayorch.common.states import JobStatus
from airflow_provider_rayorch.exceptions import (
    RayOrchAirflowError,
    RayOrchClusterError,
    RayOrchJobFailed,
    RayOrchPipelineNotImportable,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow.sdk import Context

__all__ = ["WHOLE_READ_MAX_CHARS", "JobWaiting", "execution_timeout_hint"]

#: A successful run whose log streamed so far is shorter than this has the rest of it
#: read once by offset instead of waiting for Ray to close the stream.
WHOLE_READ_MAX_CHARS = 4_000_000


class JobWaiting:
    """Mixed into the operator: needs ``hook``, ``_store``, ``_run_id``,
    ``_record_job_state``, ``poll_interval`` and ``log``."""

    hook: Any
    poll_interval: float
    log: Any
    _store: Any
    _run_id: Any
    _record_job_state: Any
    #: the cadence of the job reads (fast once the driver said its run ended)
    _end_poll: EndPoll | None = None

    def _poll(self, job_id: str, context: Context) -> JobObservation:
        """Wait for the job to end, relaying its log; raise when it did not complete."""
        store, run_id = self._store(), self._run_id(context)
        hook = self.hook
        watch = JobWatch(
            store=store,
            run_id=run_id,
            job_id=job_id,
            read_job=lambda: hook.get_job_info(job_id),
            interval=self.poll_interval,
            log=self.log,
            count_commits=True,
            job_must_succeed=True,  # a repair's run manifest predates its job
        )
        relay = LineRelay(self.log, "[ray job]")
        self._end_poll = EndPoll(self.poll_interval)
        api = hook.api  # resolved here: the connection is read on the task's own thread
        follower = LogFollower(lambda: api, job_id).start()
        seen: int | None = -1
        try:
            while True:
                seen_now = watch.look()
                if seen_now.committed != seen:
                    seen = seen_now.committed
                    self.log.info(
                        "Job %s %s: %d microbatch(es) committed", job_id, seen_now.status, seen
                    )
                self._relay(relay, follower, job_id, ended=False)
                if seen_now.ended:
                    break
                self._pause(relay, follower)
            complete = self._relay(
                relay, follower, job_id, ended=True, succeeded=seen_now.succeeded
            )
        finally:
            follower.stop()
        relay.flush()
        obs = seen_now
        if not obs.succeeded and obs.status is not JobStatus.SUCCEEDED:
            logs = "\n".join(relay.tail) if complete else self._last_log(job_id)
            status = str(obs.status)
            raise self._job_error(
                job_id, status, obs.message, logs, run_id=run_id, exit_code=_exit_of(watch)
            )
        return obs

    def _pause(self, relay: LineRelay, follower: LogFollower) -> None:
        """Until the next look: at most the poll interval, cut short by the job's log.

        A run event in the streamed log (a microbatch committed, the run ended) ends
        the wait at once. Once the driver said its run ended, the job's status is read
        at :class:`EndPoll`'s fast cadence for up to one poll interval. A failed or closed stream
        waits the plain interval.
        """
        now = time.monotonic()
        if self._end_poll is None:
            self._end_poll = EndPoll(self.poll_interval)
        end_poll = self._end_poll
        if relay.run_ended:
            end_poll.driver_ended(now)
        if end_poll.fast(now):
            time.sleep(end_poll.wait(now))
            return
        deadline = now + self.poll_interval
        while (left := deadline - time.monotonic()) > 0:
            if follower.failed is not None or follower.ended:
                time.sleep(left)
                return
            follower.wait_activity(left)
            relay.feed(follower.drain())
            if relay.take_news():
                return

    def _relay(
        self,
        relay: LineRelay,
        follower: LogFollower,
        job_id: str,
        *,
        ended: bool,
        succeeded: bool = False,
    ) -> bool:
        """Relay what is new; returns whether the relayed log is complete (only
        meaningful once the job ended). The stream's chunks when it works, else the
        whole log read again and relayed from the last offset.

        Once the job ended, the stream's close is waited for (at least
        :data:`STREAM_CLOSE_WAIT_S`) unless the driver's ``end`` event came (it prints
        nothing after it) or the run succeeded with a log under
        :data:`WHOLE_READ_MAX_CHARS`, whose rest is read once by offset. A job that
        failed after the end event has its whole log read by offset (``_last_log``)."""
        read_rest = succeeded and relay.consumed < WHOLE_READ_MAX_CHARS
        if ended and follower.failed is None and not relay.run_ended and not read_rest:
            follower.wait_closed(max(STREAM_CLOSE_WAIT_S, 2 * self.poll_interval))
        relay.feed(follower.drain())
        if follower.failed is None and (follower.ended or not ended or relay.run_ended):
            return follower.ended
        # the stream failed, or a successful run's last lines: read the log by offset
        try:
            relay.feed_whole(self.hook.get_job_logs(job_id))
        except RayOrchClusterError as exc:  # the relay is best effort; the verdict is not
            self.log.debug("reading the log of job %s failed: %s", job_id, exc)
            return False
        return True

    def _last_log(self, job_id: str) -> str:
        """The log of a job that failed: its ``RAYORCH_ERROR`` line tells a compile or
        import error (no task retry) from a failed run. Unreadable (after the hook's
        retries): ``""``, and the verdict comes from Ray's job info (exit code, log tail)."""
        try:
            return str(self.hook.get_job_logs(job_id))
        except RayOrchClusterError as exc:
            self.log.warning(
                "cannot read the log of job %s (%s): judging it by Ray's job info", job_id, exc
            )
            return ""

    def _job_error(
        self,
        job_id: str,
        status: str,
        message: str,
        logs: str,
        *,
        run_id: str | None = None,
        exit_code: int | None = None,
    ) -> RayOrchAirflowError:
        """The task's error for a job that ended without success: the driver's
        ``RAYORCH_ERROR`` line (in the log, or in the log tail Ray keeps in ``message``),
        else the driver's exit code from Ray's job info, else ``RayOrchJobFailed``."""
        ended = _ended_status(status)
        if (
            ended is not None
            and run_id is not None
            and self._store().run_manifest_record(run_id) is None
        ):
            self._record_job_state(run_id, ended, f"Ray job {job_id} ended {status}: {message}")
        error = error_from(logs, message)
        if error is not None:
            return error
        if exit_code:  # a driver that died before its error line (or a lost log)
            return driver_exit_error(exit_code, f"Ray job {job_id} ended {status}: {message}")
        if "No module named 'airflow_provider_rayorch'" in f"{message}\n{logs}":
            return RayOrchPipelineNotImportable(
                f"Ray job {job_id}: the cluster's Python cannot import airflow_provider_rayorch; "
                "install airflow-provider-rayorch in the cluster image (or add it to the "
                "connection's runtime_env `pip`)."
            )
        return RayOrchJobFailed(f"Ray job {job_id} ended {status}: {message}")

    def _deferred_job_error(
        self, event: Mapping[str, Any], context: Context
    ) -> RayOrchAirflowError:
        """The error for a trigger event that is not a success."""
        job_id = str(event.get("job_id"))
        try:  # the exit code is in the job info only
            info = self.hook.get_job_info(job_id)
        except RayOrchClusterError as exc:
            self.log.warning("cannot read job %s (%s)", job_id, exc)
            info = None
        return self._job_error(
            job_id,
            str(event.get("job_status")),
            str(event.get("message")),
            self._last_log(job_id),
            run_id=self._run_id(context),
            exit_code=exit_code(info),
        )


def _exit_of(watch: JobWatch) -> int | None:
    """The driver's exit code, from the job info the watch read last."""
    read = watch.last_read
    return exit_code(read) if isinstance(read, dict) else None


def _ended_status(status: str) -> JobStatus | None:
    """What to record for a job that ended without a run manifest (None: its status is
    not known, for example after the retry budget ran out: record nothing)."""
    try:
        parsed = JobStatus.parse(status)
    except ValueError:
        return None
    if parsed.is_active:
        return None
    return JobStatus.FAILED if parsed is JobStatus.SUCCEEDED else parsed


def execution_timeout_hint(
    timeout: Any, run_id: str | None, job_id: str | None, untimed_modules: list[str]
) -> str:
    """What the task's log says when its ``execution_timeout`` ended a run still going:
    a batch that never returns is bounded by its module's ``batch_timeout_s``, not by
    the task's timeout, which stops the whole run."""
    job = f"Ray job {job_id} stopped" if job_id else "its driver stopped"
    text = (
        f"The task's execution_timeout ({timeout}) ran out while RayOrch run {run_id} was "
        f"still running ({job}; committed microbatches are kept and a retry resumes from "
        "them). "
    )
    if untimed_modules:
        names = ", ".join(map(repr, untimed_modules))
        text += (
            "A batch whose UDF never returns holds a run until then: bound it with "
            "RayModule(...).ray_options(batch_timeout_s=N), which kills the hung batch's "
            "actor, replaces it and fails that batch under its Call's RecoveryPolicy while "
            f"the run goes on. Modules without batch_timeout_s: {names}. "
        )
    else:
        text += (
            "Every module has batch_timeout_s, so no batch hung past it: the run needs more "
            "time than execution_timeout gives it, or waited for resources (the job's log "
            "says so). "
        )
    return text + "See docs/airflow/errors.md (execution_timeout and batch_timeout_s)."
