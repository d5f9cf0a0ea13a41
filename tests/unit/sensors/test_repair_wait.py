"""A repair's waits look at the job through the job watch and pause between looks in
one place: they end when the job ends, renew the lease while they hold it, and give
up past the deadline naming what they waited for."""

from __future__ import annotations

from typing import TYPE_CHECKING
from unittest import mock

import pytest

from airflow_provider_rayorch.common.states import JobStatus
from airflow_provider_rayorch.exceptions import RayOrchJobFailed
from airflow_provider_rayorch.runs.attempts import write_repair
from airflow_provider_rayorch.runs.lease import RepairLease
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.sensors._repair import MicrobatchRepair

if TYPE_CHECKING:
    from pathlib import Path


def _repair(tmp_path: Path, statuses: list[str], *, deadline_s: float = 60.0):
    """A repair of microbatch 0 of run ``r`` whose hook answers ``statuses`` in turn
    (the last one for ever); returns it, its hook and the pauses it took."""
    hook = mock.MagicMock()
    answers = iter(statuses)
    hook.get_job_status.side_effect = lambda job_id: next(answers, statuses[-1])
    pauses: list[float] = []
    repair = MicrobatchRepair(
        hook=hook,
        store=RunStore(str(tmp_path)),
        run_id="r",
        index=0,
        owner="me",
        interval=0.5,
        log=mock.MagicMock(),
        deadline_s=deadline_s,
        sleep=pauses.append,
    )
    return repair, hook, pauses


def test_the_wait_for_the_run_job_ends_when_it_succeeds(tmp_path: Path) -> None:
    repair, hook, pauses = _repair(tmp_path, ["RUNNING", "RUNNING", "SUCCEEDED"])
    repair.wait_for_job("first-job")
    assert [c.args for c in hook.get_job_status.call_args_list] == [("first-job",)] * 3
    assert pauses == [0.5, 0.5]


def test_an_ended_job_is_not_waited_for(tmp_path: Path) -> None:
    repair, hook, pauses = _repair(tmp_path, ["FAILED"])
    repair.wait_for_job("first-job")
    assert hook.get_job_status.call_count == 1
    assert pauses == []


def test_the_wait_for_a_repair_job_renews_the_lease_and_returns_its_end(tmp_path: Path) -> None:
    repair, _, pauses = _repair(tmp_path, ["PENDING", "RUNNING", "SUCCEEDED"])
    assert repair.lease.acquire()
    with mock.patch.object(repair.lease, "renew") as renew:
        status = repair._until_ended("repair-job", "repair job", renew=True)
    assert status is JobStatus.SUCCEEDED
    assert renew.call_count == 2
    assert len(pauses) == 2


def test_a_running_earlier_repair_job_is_waited_for_under_the_lease(tmp_path: Path) -> None:
    repair, hook, pauses = _repair(tmp_path, ["RUNNING", "STOPPED"])
    write_repair(repair.store, "r", 0, attempt=2, job_id="orphan", status="running", owner="x")
    repair.acquire()
    assert [c.args for c in hook.get_job_status.call_args_list] == [("orphan",)] * 2
    assert pauses == [0.5]
    assert RepairLease(repair.store, "r", "other").held().owner == "me"  # type: ignore[union-attr]


def test_a_wait_past_its_deadline_names_what_it_waited_for(tmp_path: Path) -> None:
    repair, _, pauses = _repair(tmp_path, ["RUNNING"], deadline_s=-1.0)
    with pytest.raises(RayOrchJobFailed, match="gave up waiting for Ray job first-job"):
        repair.wait_for_job("first-job")
    assert pauses == []
