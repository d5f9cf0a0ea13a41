"""Fences for repair attempts: a second writer of one attempt is refused before it
writes, and a repair commits only over the manifest it read."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs import driver
from airflow_provider_rayorch.runs.attempt_claims import (
    AttemptConflict,
    claim_attempt,
    read_claim,
)
from airflow_provider_rayorch.runs.boundary import plain

from ..airflow.test_repair_driver import _first_run_with_failures

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)


def test_an_attempt_is_claimed_once(tmp_path: Path) -> None:
    from airflow_provider_rayorch.runs.store import RunStore

    store = RunStore(str(tmp_path))
    claim_attempt(store, "run", 3, 2, owner="first")
    with pytest.raises(AttemptConflict, match="attempt 2 is already claimed"):
        claim_attempt(store, "run", 3, 2, owner="second")
    claim_attempt(store, "run", 3, 3, owner="second")  # the next attempt is free


def test_a_claim_is_a_versioned_record_and_the_conflict_names_its_holder(
    tmp_path: Path,
) -> None:
    from airflow_provider_rayorch.runs.store import RunStore

    store = RunStore(str(tmp_path))
    claim_attempt(store, "run", 3, 2, owner="first")
    stored = json.loads((tmp_path / "run/repairs/claims/mb-00003-attempt-2.json").read_text())
    assert stored["schema_version"] == 1
    claim = read_claim(store, "run", 3, 2)
    assert claim is not None
    assert (claim.index, claim.attempt, claim.owner) == (3, 2, "first")
    with pytest.raises(AttemptConflict, match="already claimed by 'first'"):
        claim_attempt(store, "run", 3, 2, owner="second")
    assert read_claim(store, "run", 3, 4) is None


def test_an_unversioned_claim_still_reads_and_a_newer_one_is_refused(tmp_path: Path) -> None:
    from airflow_provider_rayorch.runs.store import RunStore

    store = RunStore(str(tmp_path))
    folder = tmp_path / "run" / "repairs" / "claims"
    folder.mkdir(parents=True)
    old = {"index": 1, "attempt": 2, "owner": "old", "at": "2026-01-01T00:00:00+00:00"}
    (folder / "mb-00001-attempt-2.json").write_text(json.dumps(old))
    claim = read_claim(store, "run", 1, 2)
    assert claim is not None
    assert (claim.owner, claim.schema_version) == ("old", 1)
    (folder / "mb-00001-attempt-3.json").write_text(json.dumps({**old, "schema_version": 9}))
    with pytest.raises(StoreError, match=r"attempt claim .*mb-00001-attempt-3.json has schema"):
        read_claim(store, "run", 1, 3)


def test_a_manifest_is_replaced_only_over_the_version_read(tmp_path: Path) -> None:
    store, _ = _first_run_with_failures(tmp_path)
    manifest = plain(store.manifest_record("run", 0))
    version = store.manifest_version("run", 0)
    assert version is not None
    newer = {**manifest, "committed_at": "2026-12-02T00:00:00+00:00"}
    assert store.replace_manifest("run", 0, newer, version)
    stale = {**manifest, "committed_at": "1999-01-01T00:00:00+00:00"}
    assert not store.replace_manifest("run", 0, stale, version)  # someone replaced it
    assert plain(store.manifest_record("run", 0))["committed_at"] == newer["committed_at"]


def test_a_repair_of_an_attempt_another_repair_claimed_writes_nothing(tmp_path: Path) -> None:
    """A repair that stalled past its lease while a successor claimed attempt 2 (the
    claim stands in for the successor) is refused before it writes a file."""
    store, state = _first_run_with_failures(tmp_path)
    os.remove(state / "fail-1")
    before = plain(store.manifest_record("run", 0))
    claim_attempt(store, "run", 0, 2, owner="successor")

    with pytest.raises(AttemptConflict, match="already claimed"):
        driver.repair_plan(store, "run", "0")

    assert plain(store.manifest_record("run", 0)) == before
    assert not (tmp_path / "store" / "run" / "outputs" / "mb-00000" / "attempt-2").exists()


def test_a_repair_whose_manifest_changed_meanwhile_does_not_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another repair commits microbatch 0 while this one runs: this one's commit is
    refused and the other's manifest stays."""
    store, state = _first_run_with_failures(tmp_path)
    os.remove(state / "fail-1")
    other = {**plain(store.manifest_record("run", 0)), "committed_at": "by the other repair"}
    real_claim = claim_attempt

    def claim_then_other_commits(*args, **kwargs) -> None:
        real_claim(*args, **kwargs)
        store.commit_microbatch("run", 0, other)

    monkeypatch.setattr(
        "airflow_provider_rayorch.runs.repair.claim_attempt", claim_then_other_commits
    )

    with pytest.raises(AttemptConflict, match="its manifest changed while this repair ran"):
        driver.repair_plan(store, "run", "0")

    assert plain(store.manifest_record("run", 0))["committed_at"] == "by the other repair"
