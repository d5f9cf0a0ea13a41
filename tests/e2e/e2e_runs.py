"""Runs of DAGs on the e2e deployment through the REST API, and the checks on them."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.common import head_logs

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from deployment import Deployment
    from rest import AirflowRest

RUN_DEADLINE_S = 240

#: Where the deployments keep their loopback heads' logs ($RAYORCH_HEAD_LOG_ARCHIVE of
#: their components; set by deployment.start_deployment).
HEAD_LOG_ARCHIVE: Path | None = None


def failure_digest(rest: AirflowRest, dag_id: str, run_id: str) -> str:
    """State of every task instance, the error lines of the failed ones, and what the
    logs of the loopback Ray heads that died say (``HEAD_LOG_ARCHIVE``, ``head_logs.digest``)."""
    lines = []
    for (task_id, map_index), ti in sorted(rest.task_instances(dag_id, run_id).items()):
        lines.append(f"{task_id}[{map_index}]: {ti['state']} (try {ti['try_number']})")
        if ti["state"] in ("failed", "up_for_retry") and ti["try_number"]:
            log = rest.task_log(dag_id, run_id, task_id, ti["try_number"], map_index)
            lines += [f"    {x[:1500]}" for x in _failure_lines(log.splitlines())]
    if HEAD_LOG_ARCHIVE and (heads := head_logs.digest(HEAD_LOG_ARCHIVE)):
        lines.append(heads)
    return "\n".join(lines)


#: Levels of the log entries that explain a failure. A task process that exits with a
#: non-zero code leaves only a warning ("Process exited abnormally"), an OOM kill a
#: critical entry.
_FAILURE_LEVELS = tuple(f'"level": "{level}"' for level in ("error", "critical", "warning"))


def _failure_lines(log: list[str], tail: int = 12) -> list[str]:
    """The entries of a failed try's log that say why it failed; its last ``tail``
    entries when none does (a try that never ran its task leaves no error)."""
    found = [x for x in log if any(level in x for level in _FAILURE_LEVELS)]
    return found or ["(no warning or error in the log; its last entries:)", *log[-tail:]]


def start_runs(rest: AirflowRest, runs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Trigger one run of each DAG (``{dag_id: AirflowRest.trigger kwargs}``) and unpause
    them all (every new DAG is paused), so the scheduler runs them side by side;
    returns ``{dag_id: run_id}``."""
    for dag_id in runs:
        rest.wait_for_dag(dag_id)
    started = {dag_id: rest.trigger(dag_id, **kw)["dag_run_id"] for dag_id, kw in runs.items()}
    for dag_id in started:
        rest.unpause(dag_id)
    return started


def finish_run(
    rest: AirflowRest, dag_id: str, run_id: str, timeout: float = RUN_DEADLINE_S
) -> dict[tuple[str, int], dict[str, Any]]:
    """Wait for a started run to end; fail with the task errors unless it succeeded.
    Returns its task instances."""
    run = rest.wait_for_run(dag_id, run_id, timeout)
    assert run["state"] == "success", failure_digest(rest, dag_id, run_id)
    return rest.task_instances(dag_id, run_id)


def run_to_the_end(
    rest: AirflowRest, dag_id: str, timeout: float = RUN_DEADLINE_S, **trigger: Any
) -> tuple[str, dict[tuple[str, int], dict[str, Any]]]:
    """Trigger ``dag_id`` (paused until then, as every new DAG), unpause it, wait for the
    run to end; fail with the task errors unless it succeeded."""
    run_id = start_runs(rest, {dag_id: trigger})[dag_id]
    return run_id, finish_run(rest, dag_id, run_id, timeout)


def all_task_logs(rest: AirflowRest, dag_id: str, run_id: str) -> str:
    """Every try's log of every task instance of the run, as the UI shows them."""
    return "\n".join(
        rest.task_log(dag_id, run_id, task_id, attempt, map_index)
        for (task_id, map_index), ti in rest.task_instances(dag_id, run_id).items()
        for attempt in range(1, ti["try_number"] + 1)
    )


def log_files(deployment: Deployment) -> str:
    """Every log file the deployment wrote: task and trigger logs, component logs."""
    return "\n".join(
        p.read_text(errors="replace")
        for p in (deployment.airflow_home / "logs").rglob("*")
        if p.is_file()
    ) + "\n".join(p.tail(10**9) for p in deployment.processes.values())


def assert_no_secret(secrets: dict[str, str], **texts: str) -> None:
    for what, secret in secrets.items():
        assert len(secret) >= 16, f"{what} is not a real secret: {secret!r}"
        for where, text in texts.items():
            assert secret not in text, f"the {what} appears in {where}"


def ray_secrets(deployment: Deployment, *heads: dict[str, Any]) -> dict[str, str]:
    """The user's Ray token, and any token file a loopback head's XCom names."""
    found = {"~/.ray/auth_token": deployment.ray_token_file.read_text().strip()}
    for head in heads:
        for key, value in head.items():
            if "token" in key and isinstance(value, str) and os.path.isfile(value):
                found[f"the head's {key}"] = open(value).read().strip()  # noqa: SIM115
    return found
