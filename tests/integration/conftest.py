"""A local Ray for the integration tests: started once, stopped at the end.

Tests that need Ray take the ``ray_session`` fixture; after each of them the
``no_actors_left`` check fails the test if it left an actor alive.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import pytest

from benchmarks.local_ray import init_own_ray

if TYPE_CHECKING:
    from collections.abc import Iterator

# OpenLineage (the dev extra) off: enabled, its listener changes how sensors end
os.environ.setdefault("AIRFLOW__OPENLINEAGE__DISABLED", "true")


def alive_actors() -> list[str]:
    """Class names of the actors alive in the connected Ray (read from the GCS)."""
    import ray

    actors = ray._private.state.actors()  # the GCS table; needs no dashboard
    return sorted(
        a.get("ActorClassName", "?") for a in actors.values() if a.get("State") == "ALIVE"
    )


@pytest.fixture(scope="session")
def ray_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A 2-CPU local Ray with token auth off and a private HOME, stopped at the end."""
    import ray

    if ray.is_initialized():
        yield
        return
    saved = {key: os.environ.get(key) for key in ("RAY_AUTH_MODE", "HOME")}
    os.environ["RAY_AUTH_MODE"] = "disabled"
    os.environ["HOME"] = str(tmp_path_factory.mktemp("ray-home"))
    init_own_ray()
    try:
        yield
    finally:
        ray.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def no_actors_left(ray_session: None) -> Iterator[None]:
    """Fail the test if actors created during it are still alive afterwards."""
    before = alive_actors()
    yield
    # ray.kill is asynchronous: give the GCS a bounded time to record the deaths.
    deadline = time.monotonic() + 20
    while True:
        leftover = alive_actors()
        for name in before:
            if name in leftover:
                leftover.remove(name)
        if not leftover or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not leftover, f"actors left alive by the test: {leftover}"
