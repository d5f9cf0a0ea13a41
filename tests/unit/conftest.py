"""Shared by the Airflow-layer and run-layer unit tests: the test pipelines' folder on
``sys.path`` (the driver imports pipelines by ``"module:Factory"``) and the fake engine."""

from __future__ import annotations

import os
import sys

import pytest

# OpenLineage (the dev extra) off unless a test turns it on: enabled, its listener makes
# the sensors resume on a worker instead of ending in the triggerer (docs/airflow/lineage.md)
os.environ.setdefault("AIRFLOW__OPENLINEAGE__DISABLED", "true")
PIPELINES = os.path.join(os.path.dirname(__file__), "airflow")
sys.path.insert(0, PIPELINES)

import fake_pipelines  # noqa: E402


@pytest.fixture
def fake_engine(monkeypatch: pytest.MonkeyPatch):
    """The driver runs against the fake engine; RAN records executed microbatches."""
    from airflow_provider_rayorch.runs import pipeline_load

    fake_pipelines.RAN.clear()
    monkeypatch.setattr(fake_pipelines.FakeExecutor, "crash_after", None)
    monkeypatch.setattr(pipeline_load, "_engine", fake_pipelines.fake_engine)
    return fake_pipelines
