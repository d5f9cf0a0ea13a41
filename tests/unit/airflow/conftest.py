from __future__ import annotations

import os
import sys
import tempfile

# Airflow reads AIRFLOW_HOME when first imported: keep unit tests out of ~/airflow.
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="rayorch-unit-airflow-"))

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import fake_pipelines


@pytest.fixture
def fake_engine(monkeypatch: pytest.MonkeyPatch):
    """The driver runs against the fake engine; RAN records executed microbatches."""
    from airflow_provider_rayorch.rayorch import driver

    fake_pipelines.RAN.clear()
    monkeypatch.setattr(fake_pipelines.FakeExecutor, "crash_after", None)
    monkeypatch.setattr(driver, "_engine", fake_pipelines.fake_engine)
    return fake_pipelines
