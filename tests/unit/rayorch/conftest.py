"""Fixtures of the engine tests.

Every ``Core`` built during a test (directly, or by an ``Executor``) is
recorded, and its invariants are checked when the test ends by
``Core.validate()`` (``runtime/validation.py``): ready counters
equal live queue entries, every in-flight Grain is in exactly one live batch,
settled Items match Grain phases, microbatch accounting adds up, and a core
that finished holds no batch, no ready Grain and complete outputs.
Mark a test ``no_core_invariants`` when it breaks a core on purpose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_rayorch.rayorch.runtime.core import Core

from .support import check_core

if TYPE_CHECKING:
    from collections.abc import Iterator


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "no_core_invariants: the test leaves a core broken on purpose"
    )


@pytest.fixture(autouse=True)
def core_invariants(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[Core]]:
    """Record every Core of the test; check its invariants at the end."""
    cores: list[Core] = []
    original = Core.__init__

    def recording_init(self: Core, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        cores.append(self)

    monkeypatch.setattr(Core, "__init__", recording_init)
    yield cores
    if request.node.get_closest_marker("no_core_invariants"):
        return
    for core in cores:
        check_core(core)
