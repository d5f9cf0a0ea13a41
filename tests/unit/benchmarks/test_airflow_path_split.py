"""The split of a RayOrch job's start (job start -> first commit) from the driver's
start marks, and a run's figures from its facts (made-up times; the measurement
needs a deployment: ``python -m benchmarks.airflow_path``)."""

from __future__ import annotations

import json

import pytest

from benchmarks.airflow_path.facts import Kind, figures
from benchmarks.airflow_path.split import PHASES, start_marks, start_split

pytestmark = pytest.mark.timeout(60)


def _mark(phase: str, at: float, prefix: str = "") -> str:
    event = {"event": "start_phase", "phase": phase, "at": at}
    return f"{prefix}RAYORCH_EVENT {json.dumps(event)}"


def test_marks_are_read_from_prefixed_lines_and_the_earliest_of_two_logs_wins() -> None:
    jobs_api = "\n".join([
        "driver starting", _mark("process", 100.5, "(raylet) "), _mark("imported", 101.25),
        'RAYORCH_EVENT {"event": "microbatch", "index": 0}', _mark("pools", 102.0),
    ])  # fmt: skip
    stored = "\n".join([_mark("imported", 101.0), _mark("dispatch", 102.5)])
    assert start_marks(jobs_api, stored) == {
        "process": 100.5, "imported": 101.0, "pools": 102.0, "dispatch": 102.5,
    }  # fmt: skip


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("RAYORCH_EVENT {not json", id="broken-json"),
        pytest.param('RAYORCH_EVENT ["start"]', id="not-an-object"),
        pytest.param(_mark("warming", 1.0), id="unknown-phase"),
        pytest.param(
            'RAYORCH_EVENT {"event": "start_phase", "phase": "pools", "at": "soon"}', id="no-time"
        ),
        pytest.param("start process 1.0", id="no-marker"),
    ],
)
def test_lines_that_are_no_start_mark_are_skipped(line: str) -> None:
    assert start_marks(line + "\n" + _mark("process", 5.0)) == {"process": 5.0}


def test_the_split_adds_up_to_job_start_to_first_commit() -> None:
    facts = {"job_start": 10.0, "process": 10.75, "imported": 11.5, "pools": 12.25,
             "dispatch": 12.5, "first_commit": 13.5}  # fmt: skip
    split = start_split(facts)
    assert split == {
        "supervisor_s": 0.75, "driver_imports_s": 0.75, "pool_starts_s": 0.75,
        "to_first_dispatch_s": 0.25, "first_batch_s": 1.0,
    }  # fmt: skip
    assert sum(split.values()) == facts["first_commit"] - facts["job_start"]


def test_a_missing_mark_leaves_only_its_spans_out() -> None:
    split = start_split({"job_start": 10.0, "process": 11.0, "first_commit": 14.0})
    assert split["supervisor_s"] == 1.0
    assert [k for k, v in split.items() if v is None] == [
        "driver_imports_s", "pool_starts_s", "to_first_dispatch_s", "first_batch_s",
    ]  # fmt: skip
    assert set(PHASES) == {"process", "imported", "pools", "dispatch"}


def _facts(**more: float) -> dict[str, float]:
    times = {"trigger": 0.0, "first_task_start": 1.0, "job_start": 2.0, "process": 2.5,
             "imported": 3.0, "pools": 3.25, "dispatch": 3.5, "first_commit": 4.0,
             "last_commit": 4.5, "job_end": 5.0, "task_end": 6.0, "success": 7.0}  # fmt: skip
    return {**times, **more}


def test_a_provider_runs_figures_carry_the_split_and_its_head_task() -> None:
    out = figures(Kind.OPERATOR, _facts(head_task_start=1.0, head_task_end=1.75))
    assert (out["total_s"], out["trigger_to_first_commit_s"], out["head_task_s"]) == (
        7.0,
        4.0,
        0.75,
    )
    assert (out["supervisor_s"], out["pool_starts_s"], out["first_batch_s"]) == (0.5, 0.25, 0.5)


def test_the_pattern_waits_in_its_run_sensor_and_ray_data_has_no_split() -> None:
    pattern = figures(Kind.PATTERN, _facts(first_sensor_end=5.5, run_sensor_end=6.5))
    assert (pattern["job_end_to_task_end_s"], pattern["first_commit_to_sensor_s"]) == (1.5, 1.5)
    assert pattern["task_end_to_success_s"] == 0.5
    ray_data = figures(Kind.RAY_DATA, _facts())
    assert "supervisor_s" not in ray_data
    assert ray_data["head_task_s"] is None
