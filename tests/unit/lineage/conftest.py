"""Runs to report on: the real driver (over the fake engine) writes plans, manifests,
Parquet outputs and run manifests into a run store under ``tmp_path``; the
operator's Ray cluster is a mock whose submit runs that driver in-process."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from types import SimpleNamespace
from unittest import mock

import pytest

from airflow_provider_rayorch.hooks.settings import RayOrchSettings
from airflow_provider_rayorch.runs import driver
from airflow_provider_rayorch.runs.store import RunStore

SPEC = "tests.unit.lineage.lineage_pipelines:Measure"
#: Secret strings a connection, its store options and a runtime_env hold.
SECRETS = {
    "token": "tok-3f9a1c77e2b84d05",
    "secret_key": "sk-0b6e4d2a9c1f7e35",
    "session_token": "st-8d2c5b1e7a4f9036",
    "env_var": "api-key-5e1a9d3c7b2f8064",
}


def landing(tmp_path, layout: dict[str, int]) -> list[str]:
    """Files ``{folder: count}`` under ``tmp_path/landing``; their sorted paths."""
    paths = []
    for folder, count in layout.items():
        where = tmp_path / "landing" / folder
        where.mkdir(parents=True, exist_ok=True)
        for i in range(count):
            path = where / f"doc{i}.pdf"
            path.write_bytes(b"%PDF")
            paths.append(str(path))
    return sorted(paths)


def ti_for(task_id: str = "task", map_index: int = -1, try_number: int = 1) -> mock.MagicMock:
    """A task instance as the OpenLineage provider hands it (and its macros read)."""
    when = datetime(2026, 12, 1, 12, tzinfo=UTC)
    ti = mock.MagicMock(
        dag_id="dag",
        run_id="manual__1",
        task_id=task_id,
        map_index=map_index,
        try_number=try_number,
        stats_tags={},
    )
    ti.dag_run = SimpleNamespace(logical_date=when, run_after=when, clear_number=0, conf={})
    pushed: dict = {}
    ti.xcom_push.side_effect = lambda key, value: pushed.__setitem__(key, value)
    ti.pushed = pushed
    return ti


def context_for(ti) -> dict:
    class StateStore(dict):
        def set(self, key, value, retention=None):
            self[key] = value

    return {"ti": ti, "task_state_store": StateStore(), "outlet_events": mock.MagicMock()}


def secret_hook(store_root: str, *, runs_driver: bool = True) -> mock.MagicMock:
    """A cluster connection holding every kind of secret; submit runs the driver."""
    hook = mock.MagicMock()
    hook.embedded = False
    hook.is_local_head = False
    hook.settings = RayOrchSettings(
        address="http://h:8265",
        run_store=store_root,
        token=SECRETS["token"],
        run_store_options={
            "access_key": "AKIALINEAGETEST",
            "secret_key": SECRETS["secret_key"],
            "session_token": SECRETS["session_token"],
        },
        runtime_env={"env_vars": {"MODEL_API_KEY": SECRETS["env_var"]}},
    )
    hook.run_store_uri = store_root
    hook.runtime_env.side_effect = lambda override=None: {
        **hook.settings.runtime_env,
        **dict(override or {}),
    }
    hook.find_active_job.return_value = None
    hook.dashboard_job_url.side_effect = lambda j: f"http://h:8265/#/jobs/{j}"
    submitted: set[str] = set()

    def submit(entrypoint, *, submission_id, **kw):
        hook.submitted_runtime_env = kw.get("runtime_env")
        if runs_driver:
            run_id = entrypoint.split("--run-id ")[1].split()[0].strip("'")
            driver.run_plan(RunStore(store_root), run_id)
        submitted.add(submission_id)
        return submission_id

    hook.submit_job.side_effect = submit
    hook.get_job_info.side_effect = lambda j: (
        {"status": "SUCCEEDED", "message": ""} if j in submitted else None
    )
    hook.get_job_status.side_effect = lambda j: "SUCCEEDED" if j in submitted else "MISSING"
    hook.get_job_logs.return_value = ""
    hook.run_store.side_effect = lambda uri: RunStore(uri)
    return hook


def with_hook(op, hook):
    op.__dict__["hook"] = hook
    return op


@pytest.fixture
def store_root(tmp_path) -> str:
    root = tmp_path / "store"
    root.mkdir()
    return str(root)


@pytest.fixture
def openlineage_on(monkeypatch: pytest.MonkeyPatch):
    """The OpenLineage provider enabled (the test environments disable it)."""
    pytest.importorskip("airflow.providers.openlineage")
    from airflow.providers.openlineage import conf

    monkeypatch.setattr(conf, "is_disabled", lambda: False)
    return conf


assert os.environ.get("AIRFLOW__OPENLINEAGE__DISABLED") == "true", "tests/unit/conftest.py"
