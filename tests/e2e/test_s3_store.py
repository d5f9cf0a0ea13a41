"""The run store and the repair lease on a real S3 API (moto's server on loopback).

The lease races run many rounds of threads against one S3 prefix: a lease that is a
check-then-put lets two repairs of one run both start (and so both commit one
microbatch); with S3's conditional writes exactly one wins each round.
"""

from __future__ import annotations

import sys
import uuid
from typing import TYPE_CHECKING

import pytest
from e2e_helpers import ROOT
from s3_server import BUCKET, s3_server_fixture  # noqa: F401 (a fixture)

from airflow_provider_rayorch.runs.lease import RepairLease
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

if str(ROOT) not in sys.path:  # the races live in tests/unit; this file may run alone
    sys.path.insert(0, str(ROOT))
from tests.unit.runs.lease_race import (
    race_for_a_free_lease,
    race_for_an_expired_lease,
)

if TYPE_CHECKING:
    from s3_server import S3Server

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


@pytest.fixture
def store(s3_server: S3Server) -> RunStore:
    """A run store under a fresh prefix of the session's bucket."""
    return RunStore(f"s3://{BUCKET}/runs-{uuid.uuid4().hex[:8]}", s3_server.options())


def test_a_run_store_writes_reads_and_commits_on_s3(store: RunStore) -> None:
    plan = PlanRecord(run_id="r", pipeline="m:P", fingerprint="f", sources=[1, 2, 3])
    store.write_plan(plan)
    assert store.read_plan("r") == plan
    assert store.committed("r") == frozenset()
    uri = store.write_outputs(
        "r", 0, "out", 0, [("present", None, {"a": 1}), ("failed", "x", None)]
    )
    assert uri == f"{store.uri}/r/outputs/mb-00000/out.parquet"
    store.commit_microbatch("r", 0, {"attempt": 1, "files": {"out": uri}})
    assert store.committed("r") == frozenset({0})
    assert store.read_manifest("r", 0) == {"attempt": 1, "files": {"out": uri}}
    rows = store.read_outputs("r")
    assert [(r["source"], r["outcome"], r["value"]) for r in rows] == [
        (0, "present", {"a": 1}),
        (1, "failed", None),
    ]
    store.write_run_manifest("r", {"state": "success"})
    assert store.read_run_manifest("r") == {"state": "success"}


def test_two_repairs_racing_for_a_free_lease_on_s3_never_both_win(store: RunStore) -> None:
    race_for_a_free_lease(store, "r", racers=4, rounds=40)


def test_a_late_release_races_the_takeover_of_an_expired_lease_on_s3(store: RunStore) -> None:
    race_for_an_expired_lease(store, "r", racers=3, rounds=40)


def test_a_released_lease_is_free_again_on_s3(store: RunStore) -> None:
    a, b = RepairLease(store, "r", "a"), RepairLease(store, "r", "b")
    assert a.acquire()
    assert not b.acquire()
    a.release()
    assert b.acquire()
    assert b.holder()["owner"] == "b"
