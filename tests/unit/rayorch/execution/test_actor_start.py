"""Start order, start budget and start clock of actor pools, without Ray."""

from __future__ import annotations

import pytest

from airflow_provider_rayorch.rayorch.execution.actor_start import (
    DEFAULT_ACTOR_START_RETRIES,
    RESOURCE_POLL_S,
    StartBudget,
    StartClock,
    start_order,
)


def test_every_pool_gets_its_first_actor_before_any_second_one() -> None:
    assert start_order([3, 1, 2]) == [0, 1, 2, 0, 2, 0]
    assert start_order([0, 2]) == [1, 1]


def test_the_budget_allows_retries_failures_in_a_row_then_refuses() -> None:
    budget = StartBudget(2)
    assert budget.failed(0)
    assert budget.failed(0)
    assert not budget.failed(0)
    assert budget.in_a_row(0) == 3
    assert budget.failed(1)  # another pool has its own budget
    assert budget.total == 4


def test_an_actor_that_comes_up_resets_its_pool_budget() -> None:
    budget = StartBudget(1)
    assert budget.failed(0)
    budget.came_up(0)
    assert budget.failed(0)
    assert not budget.failed(0)


def test_the_default_budget_is_documented_and_bad_values_are_refused() -> None:
    assert StartBudget().retries == DEFAULT_ACTOR_START_RETRIES == 3
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="actor_start_retries"):
            StartBudget(bad)  # type: ignore[arg-type]


def test_a_constructor_running_past_the_timeout_has_timed_out() -> None:
    clock = StartClock(10.0, spawned_at=100.0)
    assert clock.due == 110.0
    assert clock.observe(110.0, constructing=True)


def test_time_waiting_for_resources_does_not_count() -> None:
    clock = StartClock(10.0, spawned_at=100.0)
    assert not clock.observe(110.0, constructing=False)  # no process yet
    assert clock.due == 110.0 + RESOURCE_POLL_S
    assert not clock.observe(500.0, constructing=False)  # still waiting: fine
    # Its constructor began after 500: it gets its whole timeout from there.
    assert not clock.observe(502.0, constructing=True)
    assert clock.due == 510.0
    assert clock.observe(510.0, constructing=True)
