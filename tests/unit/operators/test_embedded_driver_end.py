"""An embedded driver that dies without recording its end (SIGKILL, out of memory)
reads failed once it is gone, never running."""

from __future__ import annotations

import logging

import pytest

from airflow_provider_rayorch.exceptions import RayOrchJobFailed
from airflow_provider_rayorch.operators._embedded import EmbeddedDriver
from airflow_provider_rayorch.runs.run_state import read_run_state, write_run_state
from airflow_provider_rayorch.runs.store import RunStore

pytestmark = pytest.mark.timeout(60)

LOG = logging.getLogger(__name__)


def _run(tmp_path, module: str) -> RunStore:
    driver = EmbeddedDriver(log=LOG, driver_module=module)
    with pytest.raises(RayOrchJobFailed):
        driver.run(str(tmp_path), "run", [], {}, retries=0)
    return RunStore(str(tmp_path))


def test_a_killed_embedded_driver_reads_failed(tmp_path) -> None:
    store = _run(tmp_path, "tests.unit.operators.killed_driver")
    state = read_run_state(store, "run")
    assert (state.state, state.job_status) == ("failed", "FAILED")
    assert "without recording its end" in (state.message or "")
    assert "killed by signal 9" in (state.message or "")


def test_an_end_the_driver_recorded_is_kept(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    write_run_state(store, "run", "failed", "TypeError: cannot pickle")
    _run(tmp_path, "tests.unit.operators.no_such_driver")
    state = read_run_state(store, "run")
    assert (state.state, state.message) == ("failed", "TypeError: cannot pickle")
