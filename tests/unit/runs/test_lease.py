"""The run's repair lease on a local disk: one holder, takeover of an expired lease by
one taker, a release that never frees a successor's lease, and its refusals.
The same races on a real S3 API: tests/e2e/test_s3_store.py."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import fsspec
import pyarrow.fs as pafs
import pytest

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs.conditional import ConditionalWritesUnsupported
from airflow_provider_rayorch.runs.lease import RepairLease, RepairLeaseLost
from airflow_provider_rayorch.runs.store import RunStore
from tests.unit.runs.lease_race import race_for_a_free_lease, race_for_an_expired_lease

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    return RunStore(str(tmp_path))


def _lock(tmp_path: Path) -> Path:
    return tmp_path / "r" / "locks" / "repair.json"


def test_the_lease_has_one_holder_at_a_time(store: RunStore) -> None:
    a, b = RepairLease(store, "r", "a"), RepairLease(store, "r", "b")
    assert a.acquire()
    assert a.acquire()  # ours already
    assert not b.acquire()
    assert b.held().owner == "a"
    b.release()  # not ours: no effect
    assert not b.acquire()
    a.release()
    assert b.held() is None
    assert b.acquire()
    assert not a.acquire()


def test_an_expired_lease_is_taken_over(store: RunStore) -> None:
    dead = RepairLease(store, "r", "dead", ttl_s=0.0)  # expired as soon as written
    assert dead.acquire()
    alive = RepairLease(store, "r", "alive")
    assert alive.acquire()
    assert alive.held().owner == "alive"


def test_a_late_release_leaves_the_successors_lease(store: RunStore) -> None:
    dead = RepairLease(store, "r", "dead", ttl_s=0.0)
    assert dead.acquire()
    alive = RepairLease(store, "r", "alive")
    assert alive.acquire()
    dead.release()
    assert alive.held().owner == "alive"
    assert not RepairLease(store, "r", "third").acquire()


def test_renewing_a_lease_taken_over_raises_and_names_the_new_holder(store: RunStore) -> None:
    dead = RepairLease(store, "r", "dead", ttl_s=0.0)
    assert dead.acquire()
    assert RepairLease(store, "r", "alive").acquire()
    with pytest.raises(RepairLeaseLost, match=r"'dead' no longer holds it \(now: alive\)"):
        dead.renew()


def test_renewing_pushes_the_expiry_forward(store: RunStore) -> None:
    lease = RepairLease(store, "r", "a", ttl_s=0.0)
    assert lease.acquire()
    lease.ttl_s = 600.0
    lease.renew()
    assert not RepairLease(store, "r", "b").acquire()  # no longer expired


def test_racing_repairs_take_a_free_lease_one_at_a_time(store: RunStore) -> None:
    race_for_a_free_lease(store, "r", racers=6, rounds=40)


def test_a_late_release_racing_the_takeover_never_frees_the_winner(store: RunStore) -> None:
    race_for_an_expired_lease(store, "r", racers=4, rounds=40)


def test_a_lease_written_before_records_had_versions_is_read(
    store: RunStore, tmp_path: Path
) -> None:
    _lock(tmp_path).parent.mkdir(parents=True)
    _lock(tmp_path).write_text(json.dumps({"owner": "old", "expires": 0.0}))
    held = RepairLease(store, "r", "new").held()
    assert held is not None
    assert (held.owner, held.expires) == ("old", 0.0)
    assert RepairLease(store, "r", "new").acquire()  # expired: taken over


def test_a_lease_record_this_version_cannot_read_is_refused_naming_its_file(
    store: RunStore, tmp_path: Path
) -> None:
    _lock(tmp_path).parent.mkdir(parents=True)
    _lock(tmp_path).write_text(json.dumps({"version": 2, "owner": "x", "expires": 0.0}))
    with pytest.raises(
        StoreError, match=r"repair lease .*r/locks/repair.json has schema version 2"
    ):
        RepairLease(store, "r", "new").acquire()


def test_a_lease_of_the_first_shape_reads_as_schema_version_1(
    store: RunStore, tmp_path: Path
) -> None:
    _lock(tmp_path).parent.mkdir(parents=True)
    first = {"version": 1, "owner": "old", "expires": 5.0, "nonce": "n"}
    _lock(tmp_path).write_text(json.dumps(first))
    held = RepairLease(store, "r", "new").held()
    assert held is not None
    assert (held.owner, held.expires, held.schema_version) == ("old", 5.0, 1)


def test_a_lease_is_written_with_its_schema_version(store: RunStore, tmp_path: Path) -> None:
    assert RepairLease(store, "r", "a").acquire()
    stored = json.loads(_lock(tmp_path).read_text())
    assert stored["schema_version"] == 1
    assert stored["owner"] == "a"
    assert "version" not in stored


def test_a_lease_that_is_not_json_is_refused_naming_its_file(
    store: RunStore, tmp_path: Path
) -> None:
    _lock(tmp_path).parent.mkdir(parents=True)
    _lock(tmp_path).write_text("{not json")
    with pytest.raises(StoreError, match=r"repair lease .*r/locks/repair.json is not JSON"):
        RepairLease(store, "r", "new").held()


def test_a_store_without_conditional_writes_refuses_to_take_a_lease(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path))
    store.fs = pafs.PyFileSystem(pafs.FSSpecHandler(fsspec.filesystem("memory")))
    lease = RepairLease(store, "r", "a")
    assert lease.held() is None  # reading works on any store
    with pytest.raises(ConditionalWritesUnsupported, match="needs conditional writes") as err:
        lease.acquire()
    assert "local disks and S3" in str(err.value)


def test_an_s3_lease_without_boto3_names_the_extra_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # import boto3 raises ImportError
    options = {"endpoint_override": "127.0.0.1:9", "scheme": "http", "region": "us-east-1"}
    store = RunStore("s3://bucket/runs", options)
    with pytest.raises(StoreError, match=r"pip install 'airflow-provider-rayorch\[s3\]'"):
        RepairLease(store, "r", "a").acquire()
