"""A sensor's repair submit treats a refused connection as transient.

A microbatch sensor runs only after the submit that started its run got an answer
from the same Jobs API, so a refused connection when it submits a repair is a head
that is restarting or busy, not a wrong address: it is retried within the budget,
on the one hook the sensor polls with (test_repair_sensors.py replaces only that
hook, so a repair that used another one would fail there). Before, the repair's hook
applied the first-contact rule
("it has never answered, so this is not retried") and failed the repair at once.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.exceptions import RayOrchClusterUnavailable
from airflow_provider_rayorch.sensors.rayorch import RayOrchMicrobatchSensor

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def refusing_address() -> Iterator[str]:
    """A loopback port that is bound and not listening: every connection is refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


def test_a_refused_repair_submit_is_transient(refusing_address: str) -> None:
    sensor = RayOrchMicrobatchSensor(
        task_id="microbatch",
        microbatch={"index": 0, "first_source": 0, "count": 1},
        run_id="r",
        run_store="file:///tmp/unused",
        job_id="first-job",
        ray_address=refusing_address,
        deferrable=True,
    )
    with pytest.raises(RayOrchClusterUnavailable, match="connection refused") as caught:
        sensor.hook.api.send("GET", "/api/jobs/rayorch-repair-1", allow_404=True)  # one try
    assert "never answered" not in str(caught.value)
