"""The report pages open a run store with the options of the connection that wrote the
run (pushed as XCom ``rayorch_conn_id`` beside the run id), not rayorch_default's."""

from __future__ import annotations

import json
from contextlib import nullcontext
from typing import Any

import pytest

from airflow_provider_rayorch.common.states import CONN_ID_KEY
from airflow_provider_rayorch.hooks.rayorch import open_run_store
from airflow_provider_rayorch.plugins import app as plugin_app
from airflow_provider_rayorch.plugins.resolve import RunRef, ref_from_values

pytestmark = pytest.mark.timeout(60)

OPTIONS = {"endpoint_override": "127.0.0.1:9", "scheme": "http", "region": "eu-west-3"}


def test_a_run_reference_carries_the_connection_of_its_run() -> None:
    values = {"rayorch_run_id": "r1", "rayorch_run_store": "s3://b/runs", CONN_ID_KEY: "minio"}
    assert ref_from_values(values) == RunRef("s3://b/runs", "r1", None, "minio")
    summary = {"run_id": "r1", "outputs": {"uri": "s3://b/runs/r1/outputs?region=x"}}
    ref = ref_from_values({"return_value": summary, CONN_ID_KEY: "minio"})
    assert ref == RunRef("s3://b/runs?region=x", "r1", None, "minio")


def test_open_run_store_uses_the_named_connections_options(monkeypatch) -> None:
    conn = {"conn_type": "rayorch", "extra": {"run_store_options": OPTIONS}}
    monkeypatch.setenv("AIRFLOW_CONN_RO_MINIO", json.dumps(conn))
    assert open_run_store("s3://b/runs", "ro_minio").fs.region == "eu-west-3"
    # a connection deleted since: the store opens without options, the page can say why
    assert open_run_store("/tmp/runs", "ro_gone").options == {}


def test_the_report_page_opens_the_store_with_the_runs_connection(monkeypatch) -> None:
    from fastapi.testclient import TestClient

    opened: list[tuple[str, Any]] = []

    def recording(uri: str, conn_id: str | None = None) -> Any:
        opened.append((uri, conn_id))
        raise LookupError("stop here")

    monkeypatch.setattr("airflow_provider_rayorch.hooks.rayorch.open_run_store", recording)
    monkeypatch.setattr(plugin_app, "create_session", nullcontext)
    ref = RunRef("s3://b/runs", "r1", None, "ro_minio")
    monkeypatch.setattr(plugin_app.resolve, "find_for_ti", lambda *a: ref)
    plugin_app.app.dependency_overrides[plugin_app._READ_TI.dependency] = lambda: None
    try:
        http = TestClient(plugin_app.app, raise_server_exceptions=False)
        http.get("/ti", params={"dag_id": "d", "run_id": "r", "task_id": "t"})
    finally:
        plugin_app.app.dependency_overrides.clear()
    assert opened == [("s3://b/runs", "ro_minio")]
