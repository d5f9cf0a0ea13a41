"""A loopback Airflow deployment and Ray head for the Airflow-path benchmark.

Everything lives in one temporary root: a user ``HOME``, the ``AIRFLOW_HOME``, the DAG
folder (links to the benchmark DAGs and ``dags_examples/rayorch_events.py``), the
input files, the event-driven inbox and the run store. ``scripts/deployment.py``
starts the scheduler, DAG processor, triggerer and API server (Airflow's default
loop settings, except a short DAG-folder refresh so the DAGs parse at once) and
stops them; the Ray head is ``start_local_head``'s, stopped through its own process
group (never ``ray stop``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import requests

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = ["Bench", "Rest", "start_bench"]

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "deployment.py"
EXAMPLES = REPO / "dags_examples"
DAG_FILES = [
    Path(__file__).with_name("dags") / "airflow_path_dags.py",
    EXAMPLES / "rayorch_events.py",
]
CONN_ID = "rayorch_bench"
#: Settings the benchmark adds to Airflow's defaults (recorded with the figures).
AIRFLOW_SETTINGS = {
    "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",  # parse the DAG folder at once
    "AIRFLOW__OPENLINEAGE__DISABLED": "true",  # no listener (as the e2e deployment)
}


class Rest:
    """An admin client of the deployment's ``/api/v2`` (simple auth manager)."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.http = requests.Session()
        token = requests.get(f"{self.url}/auth/token", timeout=30).json()["access_token"]
        self.http.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", 30)
        got = self.http.request(method, f"{self.url}/api/v2/{path}", **kwargs)
        if not got.ok:
            raise RuntimeError(f"{method} /api/v2/{path} -> {got.status_code}: {got.text[:500]}")
        return got.json() if got.content else None

    def get(self, path: str, **params: Any) -> Any:
        return self.call("GET", path, params=params)

    def trigger(self, dag_id: str) -> dict[str, Any]:
        return dict(self.call("POST", f"dags/{dag_id}/dagRuns", json={"logical_date": None}))

    def run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        return dict(self.get(f"dags/{dag_id}/dagRuns/{quote(run_id, safe='')}"))

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        return list(self.get(f"dags/{dag_id}/dagRuns", limit=100)["dag_runs"])

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        path = f"dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances"
        return list(self.get(path, limit=100)["task_instances"])

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
        path = (
            f"dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}"
            f"/xcomEntries/{key}"
        )
        value = self.get(path, map_index=-1)["value"]
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value

    def set_paused(self, dag_id: str, paused: bool) -> None:
        self.call("PATCH", f"dags/{dag_id}", json={"is_paused": paused})


def wait(condition: Callable[[], Any], timeout: float, what: str, every: float = 0.5) -> Any:
    """Poll ``condition`` until truthy (this is the harness waiting, never a figure)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except (requests.RequestException, RuntimeError):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Bench:
    """A running deployment and head: paths, addresses and the REST client."""

    root: Path
    airflow_home: Path
    inputs: Path
    inbox: Path
    run_store: Path
    url: str
    head: dict[str, Any]
    env: dict[str, str]
    rest: Rest | None = None
    settings: dict[str, str] = field(default_factory=dict)

    def head_token(self) -> str:
        """The benchmark's own head's token."""
        return Path(self.head["token_path"]).read_text().strip()

    def _head(self, head: Mapping[str, Any] | None) -> tuple[str, dict[str, str]]:
        """The Jobs API address of ``head`` (a head's info; None: the benchmark's own)
        and the headers carrying its token."""
        info = head or self.head
        token = Path(info["token_path"]).read_text().strip()
        return str(info["address"]), {"Authorization": f"Bearer {token}"}

    def ray_job(self, job_id: str, head: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """Ray's job info (``start_time``/``end_time`` in ms) from ``head``'s Jobs API;
        a driver (Ray Data's ``ray.init``) is found in the job list by its job id."""
        address, headers = self._head(head)
        got = requests.get(f"{address}/api/jobs/{job_id}", headers=headers, timeout=30)
        if got.ok:
            return dict(got.json())
        listed = requests.get(f"{address}/api/jobs/", headers=headers, timeout=30)
        listed.raise_for_status()
        return next((dict(j) for j in listed.json() if j.get("job_id") == job_id), None)

    def job_logs(self, job_id: str, head: Mapping[str, Any] | None = None) -> str:
        """The job's log as Ray's Jobs API serves it ("" when it has none)."""
        address, headers = self._head(head)
        got = requests.get(f"{address}/api/jobs/{job_id}/logs", headers=headers, timeout=30)
        return str(got.json().get("logs") or "") if got.ok else ""

    def logs(self) -> str:
        out = []
        for log in sorted((self.airflow_home / "deployment" / "logs").glob("*.log")):
            out.append(f"----- {log.name}\n{log.read_text(errors='replace')[-3000:]}")
        return "\n".join(out)

    def stop(self, *, keep: bool = False) -> None:
        """Stop the deployment (and what it started), then the head; remove the root."""
        from airflow_provider_rayorch.operators.local_head import stop_local_head

        try:
            subprocess.run(
                [sys.executable, str(SCRIPT), "stop", f"--airflow-home={self.airflow_home}"],
                env=self.env, capture_output=True, text=True, timeout=300, check=False,
            )  # fmt: skip
        finally:
            stop_local_head(self.head)
            if not keep:
                shutil.rmtree(self.root, ignore_errors=True)


def _user_env(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RAY_"))}
    env.update(overrides)
    return env


def start_bench(
    documents: int, batch: int, dag_ids: Sequence[str], *, timeout: float = 300
) -> Bench:
    """Write the inputs, start the head and the deployment, create the connection and
    wait for the DAGs ``dag_ids`` (unpaused) and the event-driven one (paused); the
    caller stops it (``Bench.stop``)."""
    from airflow_provider_rayorch.operators.local_head import start_local_head

    from .work import write_documents

    root = Path(tempfile.mkdtemp(prefix="airflow-path-"))
    home, airflow_home, dags = root / "home", root / "airflow-home", root / "dags"
    inputs, inbox, runs = root / "inputs", root / "landing" / "inbox", root / "runs"
    for folder in (home, airflow_home, dags, inbox, runs):
        folder.mkdir(parents=True)
    for dag_file in DAG_FILES:
        (dags / dag_file.name).symlink_to(dag_file)
    write_documents(str(inputs), documents)
    pythonpath = os.pathsep.join([str(EXAMPLES), str(REPO)])
    head = start_local_head(num_cpus=2, env={"HOME": str(home), "PYTHONPATH": pythonpath})
    env = _user_env(
        HOME=str(home),
        PYTHONPATH=pythonpath,
        AP_INPUTS=str(inputs),
        AP_OUTPUT=str(root / "out"),
        AP_BATCH=str(batch),
        AP_RAY_GCS=str(head["gcs_address"]),
        AP_RAY_TOKEN_PATH=str(head["token_path"]),
        RAYORCH_INBOX=str(inbox),
        # the plain @task's ray.init(): the head's token, as a user sets it for a cluster
        # in token mode (Ray reads these when it is imported)
        RAY_AUTH_MODE="token",
        RAY_AUTH_TOKEN_PATH=str(head["token_path"]),
        **AIRFLOW_SETTINGS,
    )
    port = _free_port()
    bench = Bench(
        root, airflow_home, inputs, inbox, runs, f"http://127.0.0.1:{port}", head, env,
        settings=dict(AIRFLOW_SETTINGS),
    )  # fmt: skip
    try:
        started = subprocess.run(
            [
                sys.executable, str(SCRIPT), "start", f"--airflow-home={airflow_home}",
                f"--dags-folder={dags}", f"--port={port}", f"--timeout={timeout:g}",
            ],
            env=env, capture_output=True, text=True, timeout=timeout + 360, check=False,
        )  # fmt: skip
        if started.returncode != 0:
            raise RuntimeError(
                f"scripts/deployment.py start failed:\n{started.stdout}{started.stderr}"
            )
        bench.rest = rest = Rest(bench.url)
        extra = {"run_store": str(runs)}
        # the head runs in token mode: its token as the connection's password, as for a
        # cluster (the deployment's tasks look loopback heads up in a registry of their own)
        conn = {
            "connection_id": CONN_ID,
            "conn_type": "rayorch",
            "host": head["address"],
            "password": bench.head_token(),
        }
        rest.call("POST", "connections", json={**conn, "extra": json.dumps(extra)})
        for dag_id in (*dag_ids, "rayorch_events"):
            wait(partial(rest.get, f"dags/{dag_id}"), 240, f"DAG {dag_id} to be parsed")
            if dag_id.startswith("ap_"):  # the event-driven DAG is unpaused when measured
                rest.set_paused(dag_id, False)
    except BaseException:
        bench.stop(keep=True)
        raise
    return bench
