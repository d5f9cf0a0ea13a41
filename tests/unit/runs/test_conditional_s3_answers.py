"""The repair lease on S3 when the server answers a conditional PUT with an error:
``409 ConditionalRequestConflict`` (another conditional write of the key was in
flight; AWS asks the caller to retry) refuses that one write and the repair's next
try takes the lease; ``501 NotImplemented`` (a server without conditional PUTs)
refuses the lease with an error naming the server and what to use instead.

The errors come from a loopback front (tests/unit/runs/s3_front.py) of the moto
server; every other request reaches moto.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest

pytest.importorskip("boto3")

from airflow_provider_rayorch.runs.conditional import ConditionalWritesUnsupported
from airflow_provider_rayorch.runs.lease import RepairLease
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.sensors._repair import MicrobatchRepair
from tests.unit.moto_s3 import BUCKET, moto_s3_fixture  # noqa: F401 (a fixture)
from tests.unit.runs.s3_front import S3Front

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.unit.moto_s3 import S3Server

pytestmark = pytest.mark.timeout(120)

LOCK = "locks/repair.json"


@pytest.fixture
def front(moto_s3: S3Server) -> Iterator[S3Front]:
    front = S3Front(moto_s3.endpoint)
    try:
        yield front
    finally:
        front.stop()


def _store(server: S3Server, front: S3Front, prefix: str) -> RunStore:
    options = {**server.options(), "endpoint_override": front.endpoint}
    return RunStore(f"s3://{BUCKET}/{prefix}", options)


def _acquired(store: RunStore, owner: str) -> RepairLease:
    """``owner``'s repair lease of run ``r``, acquired."""
    lease = RepairLease(store, "r", owner)
    assert lease.acquire()
    return lease


def _lock_puts(front: S3Front) -> list[tuple[str, int]]:
    return [
        (cond, status)
        for method, path, cond, status in front.seen
        if method == "PUT" and path.endswith(LOCK)
    ]


def test_a_conflicting_conditional_create_makes_the_repair_wait_and_take_the_lease_next(
    moto_s3: S3Server, front: S3Front, caplog: pytest.LogCaptureFixture
) -> None:
    store = _store(moto_s3, front, "conflict-create")
    front.script(409, "ConditionalRequestConflict", key_suffix=LOCK, header="If-None-Match")
    repair = MicrobatchRepair(
        hook=None,  # type: ignore[arg-type]
        store=store,
        run_id="r",
        index=0,
        owner="dag/run/submit[0] try 2",
        interval=0.05,
        log=logging.getLogger("repair-test"),
        deadline_s=60,
    )
    with caplog.at_level(logging.INFO, logger="repair-test"):
        repair.acquire()
    assert _lock_puts(front) == [("If-None-Match", 409), ("If-None-Match", 200)]
    assert "Repair waits for the run's repair lease, held by None" in caplog.text
    assert repair.lease.held().owner == "dag/run/submit[0] try 2"  # type: ignore[union-attr]
    repair.release()
    assert repair.lease.held() is None


def test_a_conflicting_conditional_replace_refuses_the_takeover_once(
    moto_s3: S3Server, front: S3Front
) -> None:
    store = _store(moto_s3, front, "conflict-replace")
    first = _acquired(store, "first")
    first.release()  # a released lease is taken over by a replace (If-Match)
    second = RepairLease(store, "r", "second")
    front.script(409, "ConditionalRequestConflict", key_suffix=LOCK, header="If-Match")
    assert not second.acquire()
    assert second.held() is None  # the refused write changed nothing
    assert second.acquire()
    assert second.held().owner == "second"  # type: ignore[union-attr]
    assert _lock_puts(front)[-2:] == [("If-Match", 409), ("If-Match", 200)]


def test_a_server_without_conditional_creates_refuses_the_lease_naming_the_fix(
    moto_s3: S3Server, front: S3Front
) -> None:
    store = _store(moto_s3, front, "no-create")
    front.script(501, "NotImplemented", key_suffix="", header="If-None-Match")
    with pytest.raises(ConditionalWritesUnsupported) as err:
        RepairLease(store, "r", "a").acquire()
    message = str(err.value)
    assert (
        f"the S3 server at http://{front.endpoint} does not implement conditional PUTs" in message
    )
    assert "use AWS S3, or an S3-compatible server that implements them" in message
    assert moto_s3.secret_key not in message
    assert not [
        path for method, path, _, _ in front.seen if method == "PUT" and path.endswith(LOCK)
    ]


def test_a_server_without_conditional_replaces_refuses_the_release_naming_the_fix(
    moto_s3: S3Server, front: S3Front
) -> None:
    store = _store(moto_s3, front, "no-replace")
    lease = _acquired(store, "a")
    front.script(501, "NotImplemented", key_suffix=LOCK, header="If-Match")
    with pytest.raises(ConditionalWritesUnsupported, match="does not implement conditional PUTs"):
        lease.release()
    assert lease.held().owner == "a"  # type: ignore[union-attr]
