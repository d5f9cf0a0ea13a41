from __future__ import annotations

import os
import tempfile

# Airflow reads AIRFLOW_HOME when first imported: keep unit tests out of ~/airflow.
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="rayorch-unit-airflow-"))

import pytest

from tests.unit.assets.state_store_fake import FakeStateStoreComms, install


@pytest.fixture
def state_comms(monkeypatch: pytest.MonkeyPatch) -> FakeStateStoreComms:
    """The asset state store, answered in memory behind the real Task SDK accessors."""
    return install(monkeypatch)
