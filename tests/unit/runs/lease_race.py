"""Races for the run's repair lease, shared by the local-disk tests and the S3 ones.

Every round starts threads at one barrier, so their store calls interleave as the
store lets them; what a round checks is a condition on the outcome (exactly one
winner, and the store names it), never a duration.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from airflow_provider_rayorch.runs.lease import RepairLease

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow_provider_rayorch.runs.store import RunStore


def _together(jobs: list[Callable[[], object]]) -> list[object]:
    """Run ``jobs`` on one thread each, released at once; their results in order.
    A job's exception is re-raised here."""
    barrier = threading.Barrier(len(jobs))
    results: list[object] = [None] * len(jobs)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = jobs[i]()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def race_for_a_free_lease(store: RunStore, run_id: str, racers: int, rounds: int) -> None:
    """Each round, ``racers`` repairs take a free lease at once: exactly one wins."""
    for n in range(rounds):
        leases = [RepairLease(store, run_id, f"round {n} racer {i}") for i in range(racers)]
        won = [
            lease
            for lease, ok in zip(leases, _together([x.acquire for x in leases]), strict=True)
            if ok
        ]
        assert [w.owner for w in won] == [getattr(leases[0].held(), "owner", None)], (
            f"round {n}: {len(won)} winners: {[w.owner for w in won]}"
        )
        won[0].release()
        assert leases[0].held() is None


def race_for_an_expired_lease(store: RunStore, run_id: str, racers: int, rounds: int) -> None:
    """Each round, a holder whose lease expired releases it while ``racers`` take it
    over: exactly one takes it, and the late release leaves the winner's lease."""
    for n in range(rounds):
        dead = RepairLease(store, run_id, f"round {n} dead", ttl_s=0.0)
        assert dead.acquire()
        leases = [RepairLease(store, run_id, f"round {n} racer {i}") for i in range(racers)]
        results = _together([dead.release, *(x.acquire for x in leases)])
        won = [lease for lease, ok in zip(leases, results[1:], strict=True) if ok]
        holder = leases[0].held()
        assert len(won) <= 1, f"round {n}: {len(won)} winners: {[w.owner for w in won]}"
        if won:  # the release may come first: the lease is then free, not expired
            assert holder is not None, f"round {n}: the late release removed {won[0].owner}"
            assert holder.owner == won[0].owner
            won[0].release()
        else:
            assert holder is None, f"round {n}: nobody won, yet {holder} holds the lease"
