"""A small client of Airflow 3's public REST API (``/api/v2``) for the e2e tests.

Authentication is the simple auth manager's: with ``simple_auth_manager_all_admins``
``GET /auth/token`` hands out an admin JWT; otherwise ``POST /auth/token`` with a
username and password. Every wait has a deadline and fails with ``on_timeout()``'s
text (the deployment's logs).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import requests

if TYPE_CHECKING:
    from collections.abc import Callable

TERMINAL_RUN_STATES = frozenset({"success", "failed"})

#: DAGs unpaused through any client, in order, until the module that did it ends.
UNPAUSED: list[tuple[AirflowRest, str]] = []


class RestError(AssertionError):
    """An API call answered with an error status."""


class AirflowRest:
    """Authenticated calls to one API server, plus the waits the tests need."""

    def __init__(
        self,
        url: str,
        *,
        username: str | None = None,
        password: str | None = None,
        on_timeout: Callable[[], str] = lambda: "",
    ) -> None:
        self.url = url.rstrip("/")
        self.on_timeout = on_timeout
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {self._token(username, password)}"

    def _token(self, username: str | None, password: str | None) -> str:
        if username is None:
            got = requests.get(f"{self.url}/auth/token", timeout=30)
        else:
            body = {"username": username, "password": password}
            got = requests.post(f"{self.url}/auth/token", json=body, timeout=30)
        if not got.ok:
            raise RestError(
                f"no API token from {self.url}/auth/token: {got.status_code} {got.text}"
            )
        return str(got.json()["access_token"])

    # -- plain calls -------------------------------------------------------------------

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """``method`` ``/api/v2/<path>``; the decoded JSON body, or RestError."""
        kwargs.setdefault("timeout", 30)
        got = self.http.request(method, f"{self.url}/api/v2/{path.lstrip('/')}", **kwargs)
        if not got.ok:
            raise RestError(f"{method} /api/v2/{path} -> {got.status_code}: {got.text[:2000]}")
        return got.json() if got.content else None

    def get(self, path: str, **params: Any) -> Any:
        return self.call("GET", path, params=params)

    def wait(self, condition: Callable[[], Any], timeout: float, what: str) -> Any:
        """Poll ``condition`` until truthy; fail with ``on_timeout()`` after ``timeout``."""
        deadline = time.monotonic() + timeout
        last: BaseException | None = None
        while True:
            try:
                value = condition()
            except (requests.RequestException, RestError) as exc:
                value, last = None, exc
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout:g}s waiting for {what}"
                    + (f" (last error: {last})" if last else "")
                    + f"\n{self.on_timeout()}"
                )
            time.sleep(1.0)

    def put_connection(self, conn: dict[str, Any]) -> None:
        """Create the connection, or replace the fields of an existing one (modules of
        the session share one deployment and may name the same connection)."""
        try:
            self.call("POST", "connections", json=conn)
        except RestError:
            self.call("PATCH", f"connections/{quote(conn['connection_id'], safe='')}", json=conn)

    # -- DAGs and runs -----------------------------------------------------------------

    def wait_for_dag(self, dag_id: str, timeout: float = 120) -> dict[str, Any]:
        """Wait until the DAG processor has parsed ``dag_id``; fail with import errors."""

        def parsed() -> dict[str, Any] | None:
            try:
                return dict(self.get(f"dags/{dag_id}"))
            except RestError:
                errors = self.get("importErrors").get("import_errors", [])
                if errors:
                    raise AssertionError(f"DAG import errors: {errors}") from None
                return None

        return dict(self.wait(parsed, timeout, f"DAG {dag_id!r} to be parsed"))

    def unpause(self, dag_id: str) -> None:
        """Unpause ``dag_id``; the e2e conftest pauses it again when the module ends."""
        self.call("PATCH", f"dags/{dag_id}", json={"is_paused": False})
        UNPAUSED.append((self, dag_id))

    def pause(self, dag_id: str, timeout: float = 600) -> None:
        """Pause ``dag_id`` once its queued and running runs have ended (a paused DAG's
        runs get no more tasks, so pausing earlier would strand a run's teardown)."""

        def idle() -> bool:
            runs = self.get(f"dags/{dag_id}/dagRuns", state=["queued", "running"])
            return not runs["dag_runs"]

        try:
            self.wait(idle, timeout, f"the runs of {dag_id} to end before pausing it")
        finally:
            self.call("PATCH", f"dags/{dag_id}", json={"is_paused": True})

    def trigger(
        self,
        dag_id: str,
        *,
        logical_date: str | None = None,
        data_interval: tuple[str, str] | None = None,
        conf: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Create a DAG run (times are ISO 8601 with a timezone); returns it."""
        body: dict[str, Any] = {"logical_date": logical_date, "conf": conf or {}}
        if data_interval is not None:
            body["data_interval_start"], body["data_interval_end"] = data_interval
        return dict(self.call("POST", f"dags/{dag_id}/dagRuns", json=body))

    def run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        return dict(self.get(f"dags/{dag_id}/dagRuns/{quote(run_id, safe='')}"))

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float) -> dict[str, Any]:
        """Wait until the run is ``success`` or ``failed``; returns the run."""

        def finished() -> dict[str, Any] | None:
            run = self.run(dag_id, run_id)
            return run if run["state"] in TERMINAL_RUN_STATES else None

        return dict(self.wait(finished, timeout, f"run {run_id!r} of {dag_id!r} to finish"))

    # -- task instances, XCom, logs ----------------------------------------------------

    def task_instances(self, dag_id: str, run_id: str) -> dict[tuple[str, int], dict[str, Any]]:
        """Every task instance of the run, mapped ones included, by (task_id, map_index)."""
        found: dict[tuple[str, int], dict[str, Any]] = {}
        path = f"dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances"
        while True:
            page = self.get(path, limit=100, offset=len(found))
            for ti in page["task_instances"]:
                found[(ti["task_id"], ti["map_index"])] = ti
            if not page["task_instances"] or len(found) >= page["total_entries"]:
                return found

    def xcom(
        self, dag_id: str, run_id: str, task_id: str, key: str = "return_value", map_index: int = -1
    ) -> Any:
        path = (
            f"dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}"
            f"/xcomEntries/{key}"
        )
        value = self.get(path, map_index=map_index)["value"]
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value

    def xcoms(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        """Every XCom entry of the run (raw values), all task instances."""
        path = f"dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/~/xcomEntries"
        entries = self.get(path, limit=1000)["xcom_entries"]
        return [
            {
                **e,
                "value": self.xcom(dag_id, run_id, e["task_id"], e["key"], e["map_index"]),
            }
            for e in entries
        ]

    def task_log(
        self, dag_id: str, run_id: str, task_id: str, try_number: int = 1, map_index: int = -1
    ) -> str:
        """The full log of one try, one line per entry (structured entries as JSON)."""
        path = (
            f"dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}"
            f"/logs/{try_number}"
        )
        body = self.call(
            "GET",
            path,
            params={"map_index": map_index, "full_content": True},
            headers={"Accept": "application/json"},
        )
        lines = []
        for entry in body["content"]:
            lines.append(entry if isinstance(entry, str) else json.dumps(entry, default=str))
        return "\n".join(lines)

    def clear(
        self,
        dag_id: str,
        run_id: str,
        task_ids: list[str | tuple[str, int]],
        *,
        include_downstream: bool = True,
        only_failed: bool = False,
        dry_run: bool = False,
    ) -> list[dict[str, Any]]:
        """Clear task instances (``(task_id, map_index)`` for one mapped instance);
        returns the cleared task instances."""
        body = {
            "dag_run_id": run_id,
            "task_ids": [t if isinstance(t, str) else [t[0], t[1]] for t in task_ids],
            "include_downstream": include_downstream,
            "only_failed": only_failed,
            "dry_run": dry_run,
        }
        got = self.call("POST", f"dags/{dag_id}/clearTaskInstances", json=body)
        return list(got["task_instances"])
