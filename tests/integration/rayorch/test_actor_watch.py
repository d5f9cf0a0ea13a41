"""What the pools learn about starting actors through Ray's public API, on the test
Ray (started without its dashboard, so without Ray's state API): a constructor's
start reaches the start log while it still runs, and a death whose cause cannot be
read counts as the actor's own, with one WARNING that says so."""

from __future__ import annotations

import logging

import pytest
import ray
from ray.exceptions import RayActorError

from airflow_provider_rayorch.rayorch.execution import actor_watch
from airflow_provider_rayorch.rayorch.execution.actor_watch import (
    StartLog,
    announcing,
    began_nodes,
    death_cause_outside,
    wait_answering,
)

from .udfs import ExitOnInit, StuckOnInit

pytestmark = pytest.mark.usefixtures("no_actors_left")


@pytest.mark.timeout(120)
def test_a_constructor_tells_the_start_log_on_which_node_it_began_while_it_still_runs() -> None:
    start_log = ray.remote(StartLog).options(num_cpus=0).remote()
    actor = ray.remote(announcing(StuckOnInit)).options(num_cpus=0).remote(start_log, "model#1")
    try:
        wait_answering(start_log, 60)
        began: dict[str, str] | None = {}
        while not began:  # the watchdog bounds it: the constructor runs at once
            began = began_nodes(start_log)
        assert began == {"model#1": ray.get_runtime_context().get_node_id()}
        ready, _ = ray.wait([actor.run.remote([1])], timeout=0)
        assert ready == []  # its constructor is still running
    finally:
        ray.kill(actor)
        ray.kill(start_log)


@pytest.mark.timeout(120)
def test_an_unreadable_actor_table_counts_a_death_as_the_actors_own_with_one_warning(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(actor_watch, "_WARNED", set())
    start_log = ray.remote(StartLog).options(num_cpus=0).remote()
    deaths = []
    try:
        for _ in range(2):
            actor = ray.remote(announcing(ExitOnInit)).options(num_cpus=0).remote(start_log, "m")
            with pytest.raises(RayActorError) as info:
                ray.get(actor.run.remote([1]))
            deaths.append(info.value)
    finally:
        ray.kill(start_log)
    with caplog.at_level(logging.DEBUG, logger=actor_watch.__name__):
        # Its node is alive: only Ray's actor table could tell a ray.kill.
        node = ray.get_runtime_context().get_node_id()
        assert [death_cause_outside(exc, node) for exc in deaths] == [False, False]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "cannot read Ray's actor table" in warnings[0]
    assert "counts against actor_start_retries even when it was killed" in warnings[0]


@pytest.mark.timeout(120)
def test_a_death_on_a_node_that_is_gone_is_no_failed_start() -> None:
    class Died(RayActorError):
        pass

    assert death_cause_outside(Died(), "0" * 56) is True  # no such node is alive
