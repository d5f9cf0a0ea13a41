"""The embedded driver: a child process of the task, with a private local Ray.

With no cluster address the driver runs beside the worker, in its own process
group (``on_kill`` stops it whole) that dies with the task process (an orphan must
never race a retry's driver on the same run). Its local Ray runs in token mode with
a token of its own, so it never reads or writes ``~/.ray``. ``ray.init`` waits a
fixed 30 s for its raylet; on a loaded machine the driver is started again. Like a
submitted job, it learns its parent OpenLineage run (the task) through its
environment (:mod:`..lineage.parent`); its local Ray's workers inherit it. A
driver that dies without recording its end (killed, out of memory) has it recorded
for it in the run-state record (:mod:`..runs.run_state`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import deque
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.common.driver_exit import driver_exit_error, error_line
from airflow_provider_rayorch.common.progress import relay_line
from airflow_provider_rayorch.exceptions import RayOrchJobFailed
from airflow_provider_rayorch.lineage.parent import with_parent_run

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "DRIVER_MODULE",
    "EMBEDDED_RAY_START_RETRIES",
    "RAY_START_TIMED_OUT",
    "EmbeddedDriver",
    "embedded_ray_env",
    "parent_run_vars",
]

DRIVER_MODULE = "airflow_provider_rayorch.job"
#: ``ray.init`` waits a fixed 30 s for its raylet (ray/_private/node.py, not
#: configurable), then fails with this; on a loaded machine the embedded driver is
#: started again, in a fresh process group, at most this many times.
RAY_START_TIMED_OUT = "The current node timed out during startup"
EMBEDDED_RAY_START_RETRIES = 2


def embedded_ray_env(base: Mapping[str, str], token_dir: str) -> dict[str, str]:
    """The embedded driver's environment: its private local Ray runs in token mode with
    a token file of its own in ``token_dir``, so Ray never reads or writes ``~/.ray``
    whatever this machine's Ray token state or ``RAY_AUTH_*`` variables."""
    import secrets

    env = {k: v for k, v in base.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_TOKEN")}
    path = os.path.join(token_dir, "auth_token")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))
    env["RAY_AUTH_MODE"] = "token"
    env["RAY_AUTH_TOKEN_PATH"] = path
    return env


def _running_ti() -> Any:
    """The running task's instance (None outside a task: a script, a bare test)."""
    try:
        from airflow.sdk import get_current_context

        return get_current_context().get("ti")
    except Exception:  # no task is running here
        return None


def parent_run_vars(ti: Any = None) -> dict[str, str]:
    """The OpenLineage parent-run variables of ``ti`` (default: the running task), by
    :func:`~airflow_provider_rayorch.lineage.parent.with_parent_run`, the submit's rule:
    empty when OpenLineage is off; names and ids only, never a secret."""
    env = with_parent_run(None, ti if ti is not None else _running_ti())
    return dict(env.get("env_vars") or {})


def _prctl() -> Any:
    """libc's prctl, loaded in the parent (a preexec_fn must not import anything)."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def _die_with_parent_fn() -> Any:
    """A preexec_fn giving the embedded driver SIGTERM when the task process dies, so
    an orphaned driver never races a retry's driver on the same run (Linux only)."""
    prctl = _prctl()
    if prctl is None:
        return None
    pr_set_pdeathsig, sigterm = 1, int(signal.SIGTERM)

    def preexec() -> None:
        prctl(pr_set_pdeathsig, sigterm)

    return preexec


class EmbeddedDriver:
    """Runs the driver of one run as a child process; :meth:`kill` stops its group.

    :param driver_env: the run-store and ``ray.init()`` options, by environment
        (they hold secrets: never on the command line).
    """

    def __init__(self, *, log: Any, driver_module: str = DRIVER_MODULE) -> None:
        self.log = log
        self.driver_module = driver_module
        self.proc: subprocess.Popen[str] | None = None

    def run(
        self,
        store_uri: str,
        run_id: str,
        driver_args: Sequence[str],
        driver_env: Mapping[str, str],
        *,
        retries: int = EMBEDDED_RAY_START_RETRIES,
        ti: Any = None,
    ) -> None:
        """Run the driver to its end; start it again when its local Ray timed out
        starting (a busy machine). A failed driver raises its exit code's error.

        :param ti: the task instance whose OpenLineage run is the driver's parent
            (default: the running task's, from its context)."""
        parent = parent_run_vars(ti)  # the task's run, over any inherited value
        for attempt in range(retries + 1):
            token_dir = tempfile.mkdtemp(prefix="rayorch-driver-")  # mode 0700
            try:
                env = {**embedded_ray_env(os.environ, token_dir), **parent, **driver_env}
                self._run_once(store_uri, run_id, driver_args, env)
                return
            except RayOrchJobFailed as exc:
                if RAY_START_TIMED_OUT not in str(exc) or attempt == retries:
                    raise
                self.log.warning(
                    "The embedded local Ray did not start in time (a busy machine): starting "
                    "the driver again (%d/%d)",
                    attempt + 1,
                    retries,
                )
            finally:
                shutil.rmtree(token_dir, ignore_errors=True)

    def _run_once(
        self, store_uri: str, run_id: str, driver_args: Sequence[str], env: dict[str, str]
    ) -> None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        cmd = [
            sys.executable, "-m", self.driver_module, "--run-store", store_uri,
            "--run-id", run_id, *driver_args,
        ]  # fmt: skip
        self.log.info("Starting the embedded driver: %s", " ".join(cmd))
        self.proc = subprocess.Popen(
            cmd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=_die_with_parent_fn(),
        )
        tail: deque[str] = deque(maxlen=200)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            tail.append(line.rstrip("\n"))
            relay_line(self.log, "[driver]", tail[-1])
        code = self.proc.wait()
        self.proc = None
        if code != 0:
            error = error_line(tail) or {}
            message = error.get("message") or "\n".join(list(tail)[-20:])
            self._record_unrecorded_end(store_uri, run_id, env, code)
            raise driver_exit_error(code, f"driver exited with code {code}: {message}")

    def _record_unrecorded_end(
        self, store_uri: str, run_id: str, env: Mapping[str, str], code: int
    ) -> None:
        """A driver that died without recording its end (killed, out of memory): the
        run-state record says so (:func:`..runs.run_state.record_job_ended`, which
        never writes over an end the driver recorded). Never raises."""
        from airflow_provider_rayorch.runs.job_status import JobStatus
        from airflow_provider_rayorch.runs.run_state import record_job_ended
        from airflow_provider_rayorch.runs.secrets import run_store_options_from_env
        from airflow_provider_rayorch.runs.store import RunStore

        how = f"the embedded driver exited with code {code}"
        if code < 0:
            how += f" (killed by signal {-code})"
        status = JobStatus.STOPPED if code == -signal.SIGTERM else JobStatus.FAILED
        try:
            store = RunStore(store_uri, run_store_options_from_env(env))
            record_job_ended(store, run_id, status, how)
        except Exception as exc:  # the driver's exit is the error that counts
            self.log.warning("could not record the end of run %s: %s", run_id, exc)

    def kill(self) -> None:
        """SIGTERM the driver's process group, if it still runs."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
