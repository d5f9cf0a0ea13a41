"""A cleared microbatch task repairs its microbatch; the run task waits for repairs and
rewrites the run manifest. The "cluster" runs the driver in-process (no Ray)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING
from unittest import mock

import pytest
from repair_plans import write_flaky_plan
from test_repair_operator import _Cluster

from airflow_provider_rayorch.exceptions import (
    RayOrchJobFailed,
    RayOrchPlanChanged,
)
from airflow_provider_rayorch.runs import driver
from airflow_provider_rayorch.runs.attempts import repair_record, write_repair
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.lease import RepairLease
from airflow_provider_rayorch.sensors.rayorch import RayOrchMicrobatchSensor, RayOrchRunSensor

if TYPE_CHECKING:
    from pathlib import Path

    from airflow_provider_rayorch.runs.store import RunStore

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def failed_run(tmp_path: Path) -> tuple[_Cluster, RunStore, Path]:
    """A finished run of 6 sources in 2 microbatches; source 1 SUPPRESSED, 4 FAILED."""
    store, state = write_flaky_plan(tmp_path, "r", sources=6, batch_size=3)
    (state / "fail-1").touch()
    (state / "fail-root-4").touch()
    driver.run_plan(store, "r")
    for marker in ("fail-1", "fail-root-4", "calls.log"):
        os.remove(state / marker)
    return _Cluster(tmp_path), store, state


def _ctx(try_number: int, max_tries: int, map_index: int = 0):
    ti = mock.MagicMock(dag_id="d", run_id="manual__1", task_id="g.microbatch")
    ti.try_number, ti.max_tries, ti.map_index = try_number, max_tries, map_index
    pushed: dict = {}
    ti.xcom_push.side_effect = lambda key, value: pushed.__setitem__(key, value)
    return {"ti": ti}, pushed


def _sensor(cluster: _Cluster, store: RunStore, index: int, **kw):
    mb = {"index": index, "first_source": 3 * index, "count": 3}
    kw.setdefault("deferrable", True)
    sensor = RayOrchMicrobatchSensor(
        task_id="microbatch",
        microbatch=mb,
        run_id="r",
        run_store=store.uri,
        job_id="first-job",
        poke_interval=0.01,
        **kw,
    )
    sensor.__dict__["hook"] = cluster.hook  # polls and repair submits: one hook
    return sensor


def _calls(state: Path) -> list[int]:
    log = state / "calls.log"
    return sorted(int(x) for x in log.read_text().split()) if log.exists() else []


def test_a_cleared_microbatch_repairs_and_returns_the_repaired_summary(failed_run) -> None:
    cluster, store, state = failed_run
    ctx, _ = _ctx(try_number=2, max_tries=1)  # first try after a clear, retries=0
    summary = _sensor(cluster, store, 0).execute(ctx)
    assert summary["state"] == "success"
    assert summary["attempt"] == 2
    assert [a["state"] for a in summary["attempts"]] == ["failed", "success"]
    assert _calls(state) == [1, 1]
    assert "--repair 0" in cluster.entrypoints[-1]
    record = plain(repair_record(store, "r", 0))
    assert record["status"] == "committed"
    assert record["job_id"] in cluster.codes
    assert RepairLease(store, "r", "x").held() is None  # released


def test_an_automatic_retry_does_not_repair(failed_run) -> None:
    cluster, store, state = failed_run
    ctx, pushed = _ctx(try_number=2, max_tries=2)  # retries=2: a retry
    with pytest.raises(Exception, match="exceeds max_failed_ratio"):
        _sensor(cluster, store, 0, retries=2).execute(ctx)
    assert _calls(state) == []
    assert cluster.entrypoints == []
    assert pushed["return_value"]["state"] == "failed"


def test_a_repair_with_another_udf_is_refused_saying_what_changed(failed_run) -> None:
    cluster, store, state = failed_run
    (state / "config.json").write_text(json.dumps({"udf": "OtherPages"}))
    ctx, pushed = _ctx(try_number=2, max_tries=1)
    with pytest.raises(RayOrchPlanChanged, match="module 'pages': udf changed from"):
        _sensor(cluster, store, 0).execute(ctx)
    assert plain(repair_record(store, "r", 0))["status"] == "refused"
    manifest = plain(store.manifest_record("r", 0))
    assert pushed["return_value"] == manifest  # the XCom keeps attempt 1
    assert manifest["attempt"] == 1


def test_a_repair_waits_for_the_lease_of_another_repair(failed_run) -> None:
    cluster, store, _ = failed_run
    assert RepairLease(store, "r", "someone else").acquire()
    ctx, _ = _ctx(try_number=2, max_tries=1)
    with pytest.raises(RayOrchJobFailed, match="repair lease held by someone else"):
        _sensor(cluster, store, 0, timeout=0).execute(ctx)
    assert cluster.entrypoints == []


def test_the_run_task_waits_for_a_running_repair_then_writes_the_run_manifest(
    failed_run,
) -> None:
    cluster, store, _ = failed_run
    run = RayOrchRunSensor(
        task_id="run",
        run_id="r",
        run_store=store.uri,
        job_id="first-job",  # a job of a head that is gone: never asked about
        poke_interval=0.01,
        max_failed_ratio=0.5,
    )
    run.__dict__["hook"] = cluster.hook
    cluster.codes["repair-job"] = 0
    cluster.hook.get_job_info.side_effect = lambda j: (
        {"status": "RUNNING", "message": ""} if j == "repair-job" else cluster.info(j)
    )
    write_repair(store, "r", 1, attempt=2, job_id="repair-job", status="running", owner="o")
    ctx, _ = _ctx(try_number=1, max_tries=0)
    assert run.poke(ctx).is_done is False
    cluster.hook.get_job_info.side_effect = cluster.info
    _sensor(cluster, store, 0).execute(_ctx(try_number=2, max_tries=1)[0])
    write_repair(store, "r", 1, attempt=2, job_id="repair-job", status="failed", owner="o")
    cluster.hook.get_job_info.reset_mock()
    result = run.poke(ctx)
    assert result.is_done
    summary = result.xcom_value
    assert summary["sources"]["present"] == 5  # source 1 repaired; source 4 not cleared
    assert [m.get("attempt", 1) for m in summary["microbatches"]] == [2, 1]
    assert {r["index"]: r["status"] for r in summary["repairs"]} == {0: "committed", 1: "failed"}
    assert plain(store.run_manifest_record("r")) == {
        k: v for k, v in summary.items() if k != "job_status"
    }
    asked = [c.args[0] for c in cluster.hook.get_job_info.call_args_list]
    assert "first-job" not in asked


def test_a_repair_waits_for_an_orphaned_earlier_repair_job(failed_run) -> None:
    cluster, store, _ = failed_run
    write_repair(store, "r", 0, attempt=2, job_id="orphan", status="running", owner="killed")
    cluster.hook.get_job_info.side_effect = lambda j: (
        {"status": "RUNNING", "message": ""} if j == "orphan" else cluster.info(j)
    )
    ctx, _ = _ctx(try_number=2, max_tries=1)
    with pytest.raises(RayOrchJobFailed, match="earlier repair job orphan"):
        _sensor(cluster, store, 0, timeout=0).execute(ctx)
    assert cluster.entrypoints == []
    assert RepairLease(store, "r", "x").held() is None  # given back on the way out


def test_a_refused_repair_is_in_the_stored_report(failed_run) -> None:
    """What the user sees: report.html names the refusal at once."""
    from airflow_provider_rayorch.reports import read_run_report

    cluster, store, state = failed_run
    (state / "config.json").write_text(json.dumps({"udf": "OtherPages"}))
    ctx, _ = _ctx(try_number=2, max_tries=1)
    with pytest.raises(RayOrchPlanChanged):
        _sensor(cluster, store, 0).execute(ctx)
    html = read_run_report(store, "r")
    assert html is not None
    assert 'id="attempts-table"' in html
    assert "udf changed from" in html
