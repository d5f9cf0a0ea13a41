"""StableFileSelector: when a listed file has landed, by the time of each look."""

from __future__ import annotations

import pytest

from airflow_provider_rayorch.assets.stable_files import QUIET_PERIOD_S, StableFileSelector
from airflow_provider_rayorch.assets.watch_state import ListedFile

Q = QUIET_PERIOD_S
T = 1_000.0


def _local() -> StableFileSelector:
    return StableFileSelector(complete_on_sight=False)


def _uris(files: list[ListedFile]) -> list[str]:
    return [f.uri for f in files]


def test_an_object_store_listing_is_complete_at_first_sight() -> None:
    s = StableFileSelector(complete_on_sight=True)
    listing = [ListedFile("s3://b/b.pdf", 5, T), ListedFile("s3://b/a.pdf", 3, None)]
    assert _uris(s.select(listing, (), T)) == ["s3://b/a.pdf", "s3://b/b.pdf"]
    assert s.next_due() is None


@pytest.mark.parametrize(
    ("age", "landed"),
    [
        pytest.param(Q, True, id="quiet-period-old"),
        pytest.param(10 * Q, True, id="much-older"),
        pytest.param(Q / 2, False, id="fresh"),
        pytest.param(-Q, False, id="mtime-ahead-of-the-clock"),
    ],
)
def test_a_local_file_lands_at_first_sight_only_once_untouched_for_the_quiet_period(
    age: float, landed: bool
) -> None:
    s = _local()
    assert _uris(s.select([ListedFile("/in/a", 1, T - age)], (), T)) == (
        ["/in/a"] if landed else []
    )
    assert s.waiting() == ([] if landed else ["/in/a"])


def test_a_fresh_file_is_due_when_its_mtime_is_a_quiet_period_old_and_lands_then() -> None:
    s = _local()
    f = ListedFile("/in/a", 7, T - 0.5)
    assert s.select([f], (), T) == []
    assert s.next_due() == T - 0.5 + Q
    assert s.select([f], (), T - 0.5 + Q) == [f]
    assert s.next_due() is None


def test_a_file_that_grew_waits_and_lands_a_quiet_period_after_its_new_mtime() -> None:
    s = _local()
    s.select([ListedFile("/in/a", 1, T)], (), T)
    grown = ListedFile("/in/a", 2, T + 1)
    assert s.select([grown], (), T + Q) == []  # grew since the last look: never announced
    assert s.next_due() == T + 1 + Q
    assert s.select([grown], (), T + 1 + Q - 0.1) == []
    assert s.select([grown], (), T + 1 + Q) == [grown]


def test_a_change_that_keeps_the_mtime_waits_a_quiet_period_from_the_look_that_saw_it() -> None:
    s = _local()
    s.select([ListedFile("/in/a", 1, T)], (), T)
    grown = ListedFile("/in/a", 2, T)  # two writes within one mtime tick
    assert s.select([grown], (), T + Q) == []
    assert s.next_due() == T + 2 * Q
    assert s.select([grown], (), T + 2 * Q - 0.1) == []
    assert s.select([grown], (), T + 2 * Q) == [grown]


def test_a_size_change_with_an_old_mtime_still_waits() -> None:
    """A writer that sets an old mtime (``cp -p``) while the size moves: the size rules."""
    s = _local()
    s.select([ListedFile("/in/a", 1, T)], (), T)
    assert s.select([ListedFile("/in/a", 9, T - 100)], (), T + 0.1) == []
    assert s.next_due() == T + 0.1 + Q


def test_a_file_without_mtime_lands_once_seen_unchanged_for_the_quiet_period() -> None:
    s = _local()
    f = ListedFile("/in/a", 4, None)
    assert s.select([f], (), T) == []
    assert s.next_due() == T + Q
    assert s.select([f], (), T + Q) == [f]


def test_known_files_and_files_gone_from_the_look_are_forgotten() -> None:
    s = _local()
    a, b = ListedFile("/in/a", 1, T), ListedFile("/in/b", 1, T)
    s.select([a, b], (), T)
    assert s.waiting() == ["/in/a", "/in/b"]
    s.select([a, b], {"/in/a"}, T + 0.1)
    assert s.waiting() == ["/in/b"]
    s.select([], (), T + 0.2)
    assert s.waiting() == []
    assert s.next_due() is None


def test_forgotten_files_are_new_at_the_next_look() -> None:
    s = _local()
    f = ListedFile("/in/a", 1, T)
    s.select([f], (), T)
    s.forget_waiting()
    assert s.next_due() is None
    assert s.select([f], (), T + Q / 2) == []  # first sight again: mtime not yet old
    assert s.select([f], (), T + Q) == [f]
