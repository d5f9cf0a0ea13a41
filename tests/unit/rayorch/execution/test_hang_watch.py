"""When to probe a worker for a hung batch and what its answer means, without Ray."""

from __future__ import annotations

from airflow_provider_rayorch.rayorch.execution.hang_watch import HangWatch
from airflow_provider_rayorch.rayorch.execution.protocol import Running


def test_no_look_before_the_oldest_batch_could_have_timed_out() -> None:
    watch = HangWatch()
    assert watch.next_due() == float("inf")
    watch.dispatched("w", None, 0.0)  # no timeout: not watched
    assert watch.next_due() == float("inf")
    watch.dispatched("w", 5.0, 10.0)
    watch.dispatched("w", 5.0, 12.0)  # a later batch does not move the first look
    assert watch.next_due() == 15.0
    assert watch.due(14.9) == ([], [])
    assert watch.due(15.0) == (["w"], [])


def test_a_batch_running_past_its_timeout_is_hung() -> None:
    watch = HangWatch()
    watch.dispatched("w", 5.0, 0.0)
    watch.asked("w", 5.0)
    verdict = watch.answered("w", Running(1, 7, 5.5), 1, {7, 8}, 5.1)
    assert verdict.hung == 7
    assert verdict.elapsed_s == 5.5


def test_the_clock_starts_when_run_starts_on_the_worker() -> None:
    """A batch that waited in the actor's queue is judged by its own run time."""
    watch = HangWatch()
    watch.dispatched("w", 5.0, 0.0)
    watch.asked("w", 5.0)
    verdict = watch.answered("w", Running(1, 8, 1.0), 1, {8}, 5.0)
    assert verdict.hung is None
    assert watch.next_due() == 9.0  # 4 s left of batch 8's 5


def test_a_batch_of_another_run_or_an_idle_worker_is_not_hung() -> None:
    watch = HangWatch()
    watch.dispatched("w", 5.0, 0.0)
    watch.asked("w", 5.0)
    assert watch.answered("w", Running(0, 7, 99.0), 1, {7}, 5.0).hung is None
    watch.asked("w", 10.0)
    assert watch.answered("w", None, 1, set(), 10.0).hung is None
    assert watch.next_due() == float("inf")  # idle and nothing in flight: unwatched


def test_a_worker_that_leaves_a_probe_unanswered_for_its_timeout_is_silent() -> None:
    watch = HangWatch()
    watch.dispatched("w", 5.0, 0.0)
    watch.asked("w", 5.0)
    assert watch.next_due() == 10.0
    assert watch.due(9.0) == ([], [])
    assert watch.due(10.0) == ([], ["w"])


def test_a_recomputation_past_the_timeout_is_hung_too() -> None:
    watch = HangWatch()
    watch.dispatched("w", 5.0, 0.0)
    watch.asked("w", 5.0)
    assert watch.answered("w", Running(0, 0, 2.0), 1, set(), 5.0).hung is None
    assert watch.next_due() == 8.0
    watch.asked("w", 8.0)
    assert watch.answered("w", Running(0, 0, 5.0), 1, set(), 8.0).hung == 0
