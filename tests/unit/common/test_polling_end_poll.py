"""The one "read the job faster once the driver said it ended" rule."""

from __future__ import annotations

from airflow_provider_rayorch.common.polling import END_POLL_S, EndPoll


def test_the_job_is_read_at_the_poll_interval_until_the_driver_says_it_ended() -> None:
    cadence = EndPoll(interval=5.0)
    assert (cadence.fast(100.0), cadence.wait(100.0)) == (False, 5.0)


def test_the_job_is_read_fast_for_one_interval_after_the_driver_said_it_ended() -> None:
    cadence = EndPoll(interval=5.0)
    cadence.driver_ended(100.0)
    assert [cadence.wait(t) for t in (100.0, 104.9, 105.0)] == [END_POLL_S, END_POLL_S, 5.0]


def test_a_second_end_does_not_extend_the_fast_reads() -> None:
    """A repair's run manifest predates its job: seeing the end again changes nothing."""
    cadence = EndPoll(interval=5.0, fast_s=0.1)
    cadence.driver_ended(100.0)
    cadence.driver_ended(104.0)
    assert (cadence.wait(104.5), cadence.wait(105.5)) == (0.1, 5.0)


def test_the_fast_cadence_is_never_slower_than_the_interval() -> None:
    cadence = EndPoll(interval=0.1, fast_s=1.0)
    cadence.driver_ended(0.0)
    assert cadence.wait(0.05) == 0.1
