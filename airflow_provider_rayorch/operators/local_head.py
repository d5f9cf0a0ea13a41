"""A loopback Ray head for one machine: setup and teardown tasks.

The per-microbatch pattern needs a Ray job that outlives the submit task, hence a
cluster. On one machine these tasks start ``ray start --head --block`` on 127.0.0.1
in a process group of its own, and stop exactly that process group afterwards
(never ``ray stop``, which kills every Ray on the machine).

The head always runs in Ray token mode with a token of its own, whatever the
machine's Ray token state (a ``~/.ray/auth_token`` left by an earlier
``ray.init()``, ``RAY_AUTH_MODE`` set or not): the token is generated here, written
to ``<head temp dir>/auth_token`` (mode 0600) and given to Ray as
``RAY_AUTH_TOKEN_PATH``. The head registers itself by address
(:mod:`airflow_provider_rayorch.common.local_heads`), so the hook sends that token
to this address. The head's info (its XCom) carries the file's path, never the token.

Every head is recorded from the moment its process group exists, keyed by the task
instance that starts it (``local_heads.note_started``), so none outlives its run
whatever clears and kills happen: a setup try killed while its head starts stops that
head (``on_kill``, which Airflow calls on SIGTERM); a setup try stops the heads that
earlier tries of its task instance were starting when they died without ``on_kill``
(SIGKILL); the teardown stops every head its setup's tries started in the run, not
only the last try's (a clear re-runs the setup while an earlier head may still be up).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_provider_rayorch.common import local_heads
from airflow_provider_rayorch.operators._head_groups import (
    is_that_head,
    stop_local_head,
    stop_orphans,
    stop_recorded_heads,
)
from airflow_provider_rayorch.operators._head_start import (
    start_local_head,
    stop_heads_starting_here,
)
from airflow_provider_rayorch.operators._shared_head import shared_head, stop_shared_head

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow.sdk import Context

__all__ = [
    "RayLocalHeadStartOperator",
    "RayLocalHeadStopOperator",
    "shared_head",
    "start_local_head",
    "stop_local_head",
    "stop_recorded_heads",
    "stop_shared_head",
]


def _task_key(context: Mapping[str, Any], task_id: str | None = None) -> str | None:
    """The heads' key of the context's task instance (of ``task_id`` in its run)."""
    ti = context.get("ti")
    if ti is None or not getattr(ti, "run_id", None):
        return None
    map_index = getattr(ti, "map_index", -1)
    return local_heads.run_key(
        str(ti.dag_id),
        str(ti.run_id),
        task_id or str(ti.task_id),
        -1 if map_index is None else int(map_index),
    )


class RayLocalHeadStartOperator(BaseOperator):
    """Setup task: start a loopback Ray head; returns its info (``address`` ...) to XCom.

    The head (and so every job on it) gets this worker's ``sys.path`` as PYTHONPATH,
    so whatever the worker can import (the DAGs folder's modules, for instance) the
    jobs can import too. It runs in token mode with a token file of its own
    (``token_path`` in its info; the token itself is never in XCom). The task ends
    when the head takes jobs (its job agent is up, not only its dashboard), within
    ``startup_timeout`` seconds: give a busy machine more. A try first stops the heads
    earlier tries were starting when they died; killed (``on_kill``), it stops the head
    it was starting.

    ``shared=True``: the machine's shared head instead (:mod:`._shared_head`), found up
    or started once for every run that asks for it; no teardown stops it.
    """

    def __init__(
        self,
        *,
        num_cpus: int | None = None,
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 120.0,
        shared: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.num_cpus = num_cpus
        self.env = dict(env or {})
        self.startup_timeout = startup_timeout
        self.shared = shared
        self._killed = False

    def execute(self, context: Context) -> dict[str, Any]:
        env = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p), **self.env}
        if self.shared:
            return self._shared(env)
        key = _task_key(context)
        if key is not None and (orphans := stop_orphans(key)):
            self.log.info("Stopped the Ray heads earlier tries left starting: %s", orphans)
        info = start_local_head(
            num_cpus=self.num_cpus, env=env, timeout=self.startup_timeout, key=key
        )
        self.log.info(
            "Ray head up at %s (process group %s, token auth with its own token file %s)",
            info["address"],
            info["pgid"],
            info["token_path"],
        )
        return info

    def _shared(self, env: Mapping[str, str]) -> dict[str, Any]:
        head = shared_head(
            num_cpus=self.num_cpus,
            env=env,
            timeout=self.startup_timeout,
            stopped=lambda: self._killed,
        )
        info = head.info
        verb = "started" if head.started else "found"
        self.log.info(
            "Shared Ray head %s at %s (process group %s; stopped by "
            "`scripts/deployment.py stop` or stop_shared_head(), never by a run)",
            verb,
            info["address"],
            info["pgid"],
        )
        if not head.started and self.num_cpus not in (None, info.get("num_cpus")):
            self.log.warning(
                "This run asked for %s CPUs; the shared head has what its first start asked "
                "for (%s): stop it to start it again with other CPUs",
                self.num_cpus,
                info.get("num_cpus") or "the machine's",
            )
        return info

    def on_kill(self) -> None:
        """Stop the head this try was starting (Airflow calls this on SIGTERM)."""
        self._killed = True
        if stopped := stop_heads_starting_here():
            self.log.info("Killed while starting: stopped its Ray head %s", stopped)


class RayLocalHeadStopOperator(BaseOperator):
    """Teardown task: stop the heads started by a :class:`RayLocalHeadStartOperator`.

    It stops the head in ``head`` (the setup's XCom: its last try's) and every head
    recorded by any try of the setup in this run: ``setup_task_id``, by default the
    task whose output ``head`` is.
    """

    template_fields: Sequence[str] = ("head",)

    def __init__(self, *, head: Any, setup_task_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.head = head
        self.setup_task_id = setup_task_id or getattr(
            getattr(head, "operator", None), "task_id", None
        )

    def execute(self, context: Context) -> None:
        key = _task_key(context, self.setup_task_id) if self.setup_task_id else None
        stopped = stop_recorded_heads(key) if key is not None else []
        if self.head and int(self.head["pgid"]) not in stopped and is_that_head(self.head):
            stop_local_head(self.head)
            stopped.append(int(self.head["pgid"]))
        if stopped:
            self.log.info("Stopped the Ray heads of process groups %s", stopped)
        else:
            self.log.info("No Ray head to stop")
