"""The up-front resource check counts what the actor processes ask Ray for."""

from __future__ import annotations

from typing import Any

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.errors import ResourceUnavailableError
from airflow_provider_rayorch.rayorch.execution import resources
from airflow_provider_rayorch.rayorch.execution.actor_pool import ActorPools

from ..support import Identity

pytestmark = pytest.mark.timeout(30)


class Three(ro.Pipeline):
    """Three light stages (1, 2 and 1 replicas at 0.25 CPU), maybe in one process."""

    def __init__(self, share: str | None) -> None:
        light = {"num_cpus": 0.25, "share_process": share}
        self.a = ro.RayModule(Identity).ray_options(replicas=1, **light)
        self.b = ro.RayModule(Identity).ray_options(replicas=2, **light)
        self.c = ro.RayModule(Identity).ray_options(replicas=1, **light)

    def forward(self, x: Any) -> Any:
        return self.c(self.b(self.a(x)))


def _check(monkeypatch, pipeline: ro.Pipeline, cpus: float) -> None:
    node = {"Alive": True, "Resources": {"CPU": cpus}}
    monkeypatch.setattr(resources.ray, "nodes", lambda: [node])
    monkeypatch.setattr(resources.ray, "cluster_resources", lambda: {"CPU": cpus})
    plan = pipeline.compile()
    pools = ActorPools(plan, start_timeout_s=1.0)
    resources.check_resources(plan, pools.actor_options, wait_for_resources=False)


def test_a_shared_process_is_counted_once(monkeypatch) -> None:
    """One process holds every replica of the three modules and asks for their sum,
    1 CPU: it fits a 1-CPU cluster (it was counted once per member replica: 4 CPUs)."""
    _check(monkeypatch, Three("text"), cpus=1.0)


def test_separate_processes_are_counted_per_replica(monkeypatch) -> None:
    _check(monkeypatch, Three(None), cpus=1.0)
    with pytest.raises(ResourceUnavailableError, match=r"CPU: 1 wanted, 0\.5 in the cluster"):
        _check(monkeypatch, Three(None), cpus=0.5)


def test_a_shared_process_too_big_for_every_node_is_named(monkeypatch) -> None:
    with pytest.raises(ResourceUnavailableError) as caught:
        _check(monkeypatch, Three("text"), cpus=0.5)
    assert str(caught.value).startswith(
        "share_process 'text' (a, b, c) asks for {'CPU': 1.0} per actor, but no node of the "
        "cluster has that much (nodes: {CPU: 0.5})"
    )
