"""The embedded driver's local Ray copes with a loaded machine.

``ray.init`` waits a fixed 30 s for its raylet to register (ray/_private/node.py,
``raylet_start_wait_time_s``, not configurable) and then fails with "The current
node timed out during startup". The operator starts the embedded driver again, in a
fresh process group (the failed start's processes die with it), a bounded number of
times; any other failure is not retried. A stand-in driver fails the first starts
the way Ray does.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import submit_fake_driver

from airflow_provider_rayorch.exceptions import RayOrchJobFailed
from airflow_provider_rayorch.operators import rayorch as rayorch_op
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def fake_driver(monkeypatch, tmp_path):
    monkeypatch.delenv("AIRFLOW_CONN_RAYORCH_DEFAULT", raising=False)
    monkeypatch.setattr(rayorch_op, "DRIVER_MODULE", "submit_fake_driver")
    monkeypatch.setenv("FAKE_DRIVER_DIR", str(tmp_path))
    return tmp_path / "starts"


def _run(tmp_path) -> None:
    op = RayOrchOperator(
        task_id="t", pipeline="fake_pipelines:Square", sources=[1], run_store=str(tmp_path)
    )
    op._run_embedded(SimpleNamespace(run_id="r"))


def test_a_local_ray_that_timed_out_starting_is_started_again(
    fake_driver, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("FAKE_DRIVER_FAILURES", "2")
    _run(tmp_path)
    assert fake_driver.read_text() == "3"


def test_the_restarts_are_bounded(fake_driver, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_DRIVER_FAILURES", "100")
    with pytest.raises(RayOrchJobFailed, match="timed out during startup"):
        _run(tmp_path)
    assert int(fake_driver.read_text()) == 1 + rayorch_op.EMBEDDED_RAY_START_RETRIES


def test_other_driver_failures_are_not_retried(fake_driver, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_DRIVER_ERROR", "ValueError: a bug in a UDF's constructor")
    with pytest.raises(RayOrchJobFailed, match="a bug in a UDF"):
        _run(tmp_path)
    assert fake_driver.read_text() == "1"
    assert submit_fake_driver.RAY_START_TIMEOUT not in "a bug in a UDF"
