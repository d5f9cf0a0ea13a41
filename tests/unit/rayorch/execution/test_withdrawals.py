"""An actor's withdrawal marks across the runs of a warm Executor, without Ray."""

from __future__ import annotations

from airflow_provider_rayorch.rayorch.execution.withdrawals import Withdrawals


def test_rows_of_a_queued_batch_are_skipped_when_it_starts() -> None:
    marks = Withdrawals()
    assert marks.start((1, 1)) is None
    assert marks.mark((1, 2), [0, 2])
    assert marks.start((1, 2)) == {0, 2}
    assert not marks.mark((1, 2), [1])  # it has started: moot


def test_a_new_run_restarting_batch_ids_is_still_withdrawn() -> None:
    """Batch ids restart every run; the epoch tells them apart."""
    marks = Withdrawals()
    for batch in (1, 2, 3):
        marks.start((1, batch))
    assert marks.mark((2, 2), [0])  # run 2's batch 2 is newer than run 1's batch 3
    assert marks.start((2, 1)) is None
    assert marks.start((2, 2)) == {0}


def test_marks_of_batches_older_than_the_one_starting_are_dropped() -> None:
    marks = Withdrawals()
    marks.mark((1, 5), [0])
    marks.mark((1, 9), [1])
    marks.start((1, 7))
    assert len(marks) == 1
    assert marks.start((1, 9)) == {1}
