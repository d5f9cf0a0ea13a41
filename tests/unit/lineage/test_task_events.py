"""What each task reports to OpenLineage, built from the records a run stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_rayorch.exceptions import RayOrchFailedRatioExceeded
from airflow_provider_rayorch.operators.microbatch import RayOrchSubmitOperator
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator
from airflow_provider_rayorch.runs.store import RunStore
from airflow_provider_rayorch.sensors.rayorch import RayOrchMicrobatchSensor, RayOrchRunSensor

from .conftest import SPEC, context_for, landing, secret_hook, ti_for, with_hook
from .events import build_event, check_event, facet_of, inputs_of, outputs_of

pytest.importorskip("airflow.providers.openlineage")
pytestmark = pytest.mark.timeout(120)


def _operator(store_root, sources, cls=RayOrchOperator, **kw):
    kw.setdefault("input_batch_size", 2)
    op = cls(task_id="task", pipeline=SPEC, sources=sources, poll_interval=0.01, **kw)
    return with_hook(op, secret_hook(store_root))


def _run(op, ti=None):
    ti = ti or ti_for()
    return op.execute(context_for(ti)), ti


def test_operator_reports_input_locations_its_outputs_folder_and_its_facet(
    tmp_path, store_root, fake_engine
) -> None:
    files = landing(tmp_path, {"a": 3, "b": 2})
    op = _operator(store_root, str(tmp_path / "landing" / "*" / "*.pdf"))
    summary, ti = _run(op)
    event = build_event(op.get_openlineage_facets_on_complete(ti), "complete")
    check_event(event)

    # one dataset per location (the glob's files' common folder), never one per file
    assert inputs_of(event) == {("file", str(tmp_path / "landing")): len(files)}
    run_id = summary["run_id"]
    assert outputs_of(event) == [("file", f"{store_root}/{run_id}/outputs")]
    (output,) = event["outputs"]
    assert [(f["name"], f["type"]) for f in output["facets"]["schema"]["fields"]] == [
        ("source", "int64"),
        ("outcome", "string"),
        ("cause", "string"),
        ("value", "int64"),  # read from the stored Parquet file's footer
    ]
    assert output["outputFacets"]["outputStatistics"]["rowCount"] == 5
    facet = facet_of(event)
    assert facet["runId"] == run_id
    assert facet["sources"] == summary["sources"]
    assert facet["entities"] == summary["entities"]
    assert facet["grains"] == summary["grains"]
    assert facet["microbatchCount"] == 3
    assert [m["count"] for m in facet["microbatches"]] == [2, 2, 1]
    assert facet["state"] == "success"


def test_two_runs_name_their_own_outputs(tmp_path, store_root, fake_engine) -> None:
    """The old event named the run store's root: the same output for every run and DAG."""
    files = landing(tmp_path, {"a": 2})
    outputs = set()
    for dag_run in ("manual__1", "manual__2"):
        op = _operator(store_root, files)
        ti = ti_for()
        ti.run_id = dag_run
        _run(op, ti)
        outputs.update(
            outputs_of(build_event(op.get_openlineage_facets_on_complete(ti), "complete"))
        )
    assert len(outputs) == 2
    assert ("file", store_root) not in outputs


def test_a_failed_run_carries_its_failures_and_an_error_facet(
    tmp_path, store_root, fake_engine
) -> None:
    files = landing(tmp_path, {"a": 4})
    op = _operator(store_root, files, pipeline_kwargs={"poison": [files[1]]})
    ti = ti_for()
    with pytest.raises(RayOrchFailedRatioExceeded):
        op.execute(context_for(ti))
    event = build_event(op.get_openlineage_facets_on_failure(ti), "fail")
    check_event(event)
    facet = facet_of(event)
    assert facet["state"] == "failed"
    assert facet["sources"]["failed"] == 1
    assert facet["failures"] == [
        {"source": 1, "outcome": "failed", "cause": f"doc[{files[1]}]: unreadable"}
    ]
    message = event["run"]["facets"]["errorMessage"]["message"]
    assert "1 of 4 sources failed" in message
    assert "unreadable" in message


def test_row_count_is_the_rows_the_outputs_hold(tmp_path, store_root, fake_engine) -> None:
    """Every source has a row in the outputs (a failed one: its outcome and cause);
    ``rowCount`` counted only the present ones (found on the e2e deployment)."""
    import pyarrow.parquet as pq

    files = landing(tmp_path, {"a": 4})
    op = _operator(store_root, files, pipeline_kwargs={"poison": [files[1]]})
    ti = ti_for()
    with pytest.raises(RayOrchFailedRatioExceeded):
        op.execute(context_for(ti))
    event = build_event(op.get_openlineage_facets_on_failure(ti), "fail")
    (output,) = event["outputs"]
    written = sum(pq.read_metadata(p).num_rows for p in Path(output["name"]).rglob("*.parquet"))
    assert written == 4
    assert output["outputFacets"]["outputStatistics"]["rowCount"] == written
    sensor, run, _mb = _sensors(store_root, facet_of(event)["runId"], 0)  # sources 0 and 1
    for task, rows in ((sensor, 2), (run, 4)):
        done = build_event(task.get_openlineage_facets_on_failure(ti_for("t")), "fail")
        assert done["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == rows


def test_submit_task_reports_the_planned_run(tmp_path, store_root, fake_engine) -> None:
    files = landing(tmp_path, {"a": 3, "b": 2})
    op = _operator(store_root, files, cls=RayOrchSubmitOperator)
    op.hook.submit_job.side_effect = lambda entrypoint, *, submission_id, **kw: submission_id
    descriptors, ti = _run(op)
    event = build_event(op.get_openlineage_facets_on_complete(ti), "complete")
    check_event(event)
    assert inputs_of(event) == {("file", str(tmp_path / "landing")): 5}
    facet = facet_of(event)
    assert facet["sources"] == {"total": 5}
    assert facet["microbatchCount"] == len(descriptors) == 3
    assert "state" not in facet  # nothing ran yet


def _sensors(store_root, run_id, index):
    common = {"run_id": run_id, "run_store": store_root, "job_id": "job-1"}
    hook = secret_hook(store_root)
    run_store = RunStore(store_root)
    plan = run_store.read_plan(run_id)
    mb = plan.microbatches()[index]
    sensor = RayOrchMicrobatchSensor(task_id="microbatch", microbatch=mb, **common)
    run = RayOrchRunSensor(task_id="run", **common)
    for s in (sensor, run):
        s.__dict__["hook"] = hook
        s._store = lambda: RunStore(store_root)
    return sensor, run, mb


def test_microbatch_and_run_sensors_report_their_own_facets(
    tmp_path, store_root, fake_engine
) -> None:
    a = landing(tmp_path, {"a": 3})
    b = landing(tmp_path, {"b": 2})
    files = sorted(a + b)
    op = _operator(store_root, files, pipeline_kwargs={"poison": [files[3]]}, max_failed_ratio=1)
    summary, _ = _run(op)
    sensor, run, _mb = _sensors(store_root, summary["run_id"], 1)  # sources 2 and 3

    started = build_event(sensor.get_openlineage_facets_on_start(), "start")
    check_event(started)
    done = build_event(
        sensor.get_openlineage_facets_on_complete(ti_for("microbatch", 1)), "complete"
    )
    check_event(done)
    landing_dir = str(tmp_path / "landing")
    assert inputs_of(done) == {("file", landing_dir): 2}  # the run's location, its 2 sources
    assert (
        outputs_of(done)
        == outputs_of(started)
        == [("file", f"{store_root}/{summary['run_id']}/outputs")]
    )
    facet = facet_of(done)
    assert facet["microbatch"] == {"index": 1, "firstSource": 2, "count": 2, **_state(facet)}
    assert facet["sources"]["total"] == 2
    assert facet["sources"]["failed"] == 1
    assert [f["source"] for f in facet["failures"]] == [3]

    run_event = build_event(run.get_openlineage_facets_on_complete(ti_for("run")), "complete")
    check_event(run_event)
    assert inputs_of(run_event) == {("file", landing_dir): 5}
    run_facet = facet_of(run_event)
    assert run_facet["sources"] == summary["sources"]
    assert run_facet["microbatchCount"] == 3
    assert "microbatch" not in run_facet


def _state(facet):
    state = facet["microbatch"].get("state")
    return {} if state is None else {"state": state}


def test_a_list_in_two_buckets_is_two_inputs_and_inline_values_none(store_root) -> None:
    from airflow_provider_rayorch.lineage.tasks import operator_lineage_on_start

    op = _operator(
        store_root,
        ["s3://raw/in/2026/a.pdf", "s3://raw/in/2026/b.pdf", "gs://other/x/c.pdf", 42, "text"],
    )
    event = build_event(operator_lineage_on_start(op), "start")
    check_event(event)
    assert inputs_of(event) == {("s3://raw", "in/2026"): 2, ("gs://other", "x"): 1}


def _operator_whose_job_failed(tmp_path, store_root):
    """An operator whose job ended FAILED before any manifest, and its task instance."""
    from airflow_provider_rayorch.exceptions import RayOrchJobFailed

    op = _operator(store_root, landing(tmp_path, {"a": 2}))
    op.hook.submit_job.side_effect = lambda entrypoint, *, submission_id, **kw: submission_id
    op.hook.get_job_info.side_effect = lambda j: {"status": "FAILED", "message": "OOM killed"}
    ti = ti_for()
    with pytest.raises(RayOrchJobFailed):
        op.execute(context_for(ti))
    return op, ti


def test_a_job_that_ended_without_a_manifest_says_why(tmp_path, store_root, fake_engine) -> None:
    op, ti = _operator_whose_job_failed(tmp_path, store_root)
    event = build_event(op.get_openlineage_facets_on_failure(ti), "fail")
    check_event(event)
    assert "OOM killed" in event["run"]["facets"]["errorMessage"]["message"]
    assert "state" not in facet_of(event)  # no summary: the run never ended


def test_sensors_of_a_run_never_prepared_report_nothing(store_root) -> None:
    common = {"run_id": "None", "run_store": store_root, "job_id": "None"}
    mb = {"index": 0, "first_source": 0, "count": 1}
    for sensor in (
        RayOrchMicrobatchSensor(task_id="microbatch", microbatch=mb, **common),
        RayOrchRunSensor(task_id="run", **common),
    ):
        lineage = sensor.get_openlineage_facets_on_complete(ti_for())
        assert (lineage.inputs, lineage.outputs, lineage.run_facets) == ([], [], {})


def test_an_object_store_sensor_reuses_the_connection_it_already_read(store_root) -> None:
    """In the listener's fork a connection lookup may not finish within its budget."""
    from airflow_provider_rayorch.lineage.tasks import _sensor_store

    sensor = RayOrchRunSensor(task_id="run", run_id="r", run_store="s3://bucket/runs", job_id="j")
    hook = secret_hook(store_root)
    hook.__dict__["settings"] = hook.settings
    sensor.__dict__["hook"] = hook
    opened = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            "airflow_provider_rayorch.runs.store.RunStore",
            lambda uri, options=None: opened.append((uri, options)),
        )
        sensor._store = lambda: pytest.fail("looked the connection up again")
        _sensor_store(sensor)
    assert opened == [("s3://bucket/runs", hook.settings.run_store_options)]


@pytest.mark.parametrize(
    "pipeline",
    [
        pytest.param("tests.unit.lineage.lineage_pipelines:DoesNotCompile", id="compile-error"),
        pytest.param("tests.unit.lineage.lineage_pipelines:Mesure", id="misspelt-class"),
    ],
)
def test_a_task_that_failed_before_submitting_reports_no_output(
    tmp_path, store_root, pipeline
) -> None:
    """Nothing was written, so the FAIL event names no output dataset; its error facet
    says the run was never submitted."""
    from airflow_provider_rayorch.exceptions import (
        RayOrchCompileFailed,
        RayOrchPipelineNotImportable,
    )

    files = landing(tmp_path, {"a": 2})
    op = with_hook(
        RayOrchOperator(task_id="task", pipeline=pipeline, sources=files),
        secret_hook(store_root),
    )
    ti = ti_for()
    with pytest.raises((RayOrchCompileFailed, RayOrchPipelineNotImportable)):
        op.execute(context_for(ti))
    op.hook.submit_job.assert_not_called()
    event = build_event(op.get_openlineage_facets_on_failure(ti), "fail")
    check_event(event)
    assert outputs_of(event) == []
    assert "never submitted" in event["run"]["facets"]["errorMessage"]["message"]


def test_a_job_that_committed_nothing_reports_no_output(tmp_path, store_root, fake_engine) -> None:
    op, ti = _operator_whose_job_failed(tmp_path, store_root)
    assert outputs_of(build_event(op.get_openlineage_facets_on_failure(ti), "fail")) == []
