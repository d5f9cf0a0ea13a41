"""The driver announces the phases of its start, in order, each with the epoch time it
was reached; the job's log is where readers split job start -> first dispatch."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest

from airflow_provider_rayorch import job
from airflow_provider_rayorch.runs import driver_events
from airflow_provider_rayorch.runs.driver_events import StartPhase

from .test_driver import _store_local_plan

pytestmark = pytest.mark.timeout(60)

#: One start line, exactly as a reader of the job's log parses it.
START_LINE = re.compile(
    r'^RAYORCH_EVENT \{"at": (\d+\.\d+), "event": "start_phase", "phase": "([a-z]+)"\}$'
)


def _start_phases(out: str) -> list[tuple[str, float]]:
    found = [START_LINE.match(line) for line in out.splitlines()]
    return [(m.group(2), float(m.group(1))) for m in found if m is not None]


def test_the_job_prints_its_start_phases_in_order_with_increasing_times(tmp_path, capsys) -> None:
    store = _store_local_plan(
        tmp_path, "engine_pipelines:TwoOutputs", list(range(7)), input_batch_size=4
    )
    before = time.time()
    assert job.main(["--run-store", store.uri, "--run-id", "run"]) == 0
    after = time.time()
    phases = _start_phases(capsys.readouterr().out)
    assert [p for p, _ in phases] == [p.value for p in StartPhase]
    times = [at for _, at in phases]
    assert times == sorted(times)
    assert times[0] <= before  # the process began before the test ran the job
    assert before <= times[1]
    assert times[-1] <= after


def test_the_first_dispatch_is_printed_once_before_the_first_commit_line(tmp_path, capsys) -> None:
    store = _store_local_plan(
        tmp_path, "engine_pipelines:TwoOutputs", list(range(7)), input_batch_size=2
    )
    assert job.main(["--run-store", store.uri, "--run-id", "run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    dispatch = [i for i, line in enumerate(lines) if '"phase": "dispatch"' in line]
    commits = [i for i, line in enumerate(lines) if line.startswith("microbatch ")]
    assert len(dispatch) == 1
    assert len(commits) == 4
    assert dispatch[0] < commits[0]


def test_a_start_line_is_one_event_with_the_phase_and_its_time(capsys) -> None:
    driver_events.start_phase(StartPhase.POOLS, 1764921600.25)
    out = capsys.readouterr().out
    assert _start_phases(out) == [("pools", 1764921600.25)]
    payload = json.loads(out.removeprefix("RAYORCH_EVENT "))
    assert payload == {"event": "start_phase", "phase": "pools", "at": 1764921600.25}


def test_the_process_start_is_read_from_proc_before_the_first_line_runs() -> None:
    code = (
        "import time; t = time.time()\n"
        "from airflow_provider_rayorch.runs.driver_events import process_started_at\n"
        "print(t - process_started_at(float('nan')))\n"
    )
    ahead = float(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )
    assert 0.0 <= ahead < 10.0  # the interpreter's own start came first


def test_without_proc_the_process_start_is_the_fallback(monkeypatch) -> None:
    def no_proc(*_args: object, **_kwargs: object) -> None:
        raise OSError("no /proc here")

    monkeypatch.setattr(driver_events, "open", no_proc, raising=False)
    assert driver_events.process_started_at(12.5) == 12.5


def test_the_runs_start_event_counts_its_microbatches_in_a_line_that_does_not_grow(
    tmp_path, capsys
) -> None:
    store = _store_local_plan(
        tmp_path, "engine_pipelines:TwoOutputs", list(range(40)), input_batch_size=2
    )
    assert job.main(["--run-store", store.uri, "--run-id", "run"]) == 0
    starts = [
        json.loads(line.removeprefix("RAYORCH_EVENT "))
        for line in capsys.readouterr().out.splitlines()
        if line.startswith('RAYORCH_EVENT {"committed"')
    ]
    assert starts == [{"event": "start", "run_id": "run", "committed": 0, "pending": 20}]
