"""The driver keeps its own log in the run store: what a task or a person needs once
the Ray head (and the job log in its temp dir) is gone."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys

import pytest

from airflow_provider_rayorch.runs import driver, driver_log, exit_codes, pipeline_load
from airflow_provider_rayorch.runs.run_state import read_run_state
from airflow_provider_rayorch.runs.secrets import RUN_STORE_OPTIONS_ENV
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore
from airflow_provider_rayorch.runs.uris import driver_log_parts

pytestmark = pytest.mark.timeout(90)


def _plan(tmp_path, fake, *, n: int = 6, size: int = 2, poison=()) -> RunStore:
    store = RunStore(str(tmp_path))
    fingerprint = fake.Square(poison=list(poison)).compile().fingerprint
    store.write_plan(
        PlanRecord(
            run_id="run",
            pipeline="fake_pipelines:Square",
            fingerprint=fingerprint,
            sources=list(range(n)),
            input_batch_size=size,
            pipeline_kwargs={"poison": list(poison)},
        )
    )
    return store


def _main(tmp_path) -> int:
    return driver.main(["--run-store", str(tmp_path), "--run-id", "run"])


def _stored(store: RunStore, number: int = 1) -> str:
    data = store.read_bytes(driver_log_parts("run", number))
    assert data is not None, f"no driver log {number} in the run store"
    return data.decode()


def test_the_drivers_log_lands_in_the_run_store(tmp_path, fake_engine, capsys) -> None:
    store = _plan(tmp_path, fake_engine, poison=[3])
    assert _main(tmp_path) == 0
    text = _stored(store)
    for line in (
        "microbatch 1/3 committed: 2 sources, 2 present, 0 failed, 0 suppressed",
        "microbatch 2/3 committed: 2 sources, 1 present, 1 failed, 0 suppressed",
        '"event": "end"',
    ):
        assert line in text
    # the process's own output is unchanged: the log is a copy
    assert "microbatch 3/3 committed" in capsys.readouterr().out


def test_a_crashing_driver_keeps_its_traceback_in_the_run_store(
    tmp_path, fake_engine, monkeypatch
) -> None:
    store = _plan(tmp_path, fake_engine)
    monkeypatch.setattr(fake_engine.FakeExecutor, "crash_after", 1)
    with pytest.raises(fake_engine.CrashAfter):
        _main(tmp_path)
    text = _stored(store)
    assert "microbatch 1/3 committed" in text
    assert "Traceback (most recent call last)" in text
    assert "CrashAfter: driver killed after 1 microbatches" in text
    # the streams are the process's own again
    assert not isinstance(sys.stdout, driver_log.Tee)
    assert not isinstance(sys.stderr, driver_log.Tee)


def test_the_log_is_in_the_store_at_each_commit_before_the_run_ends(
    tmp_path, fake_engine, monkeypatch
) -> None:
    """A driver killed with SIGKILL copies nothing at its end: what it committed is in
    the stored log already."""
    store = _plan(tmp_path, fake_engine)
    seen: list[str] = []
    stream = fake_engine.FakeExecutor.stream

    def watching(self, *args, **kwargs):
        for mb in stream(self, *args, **kwargs):
            if mb.index == 2:  # microbatches 0 and 1 are committed by now
                seen.append(_stored(store))
            yield mb

    monkeypatch.setattr(fake_engine.FakeExecutor, "stream", watching)
    monkeypatch.setattr(driver_log, "COMMIT_COPY_EVERY_S", 0.0)
    assert _main(tmp_path) == 0
    assert "microbatch 2/3 committed" in seen[0]


def test_each_driver_of_a_run_keeps_its_own_log(tmp_path, fake_engine, monkeypatch) -> None:
    store = _plan(tmp_path, fake_engine)
    monkeypatch.setattr(fake_engine.FakeExecutor, "crash_after", 1)
    with pytest.raises(fake_engine.CrashAfter):
        _main(tmp_path)
    monkeypatch.setattr(fake_engine.FakeExecutor, "crash_after", None)
    assert _main(tmp_path) == 0
    assert "CrashAfter" in _stored(store, 1)
    second = _stored(store, 2)
    assert "CrashAfter" not in second
    assert "microbatch 3/3 committed" in second
    assert driver_log.driver_log_names(store, "run") == ["driver-1.log", "driver-2.log"]


def test_a_driver_error_is_kept_with_its_message(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    assert driver.main(["--run-store", str(tmp_path), "--run-id", "run"]) == exit_codes.EXIT_ERROR
    assert "RAYORCH_ERROR" in _stored(store)
    assert "no plan record for run 'run'" in _stored(store)


def test_the_stored_log_holds_no_secret_and_no_terminal_codes(
    tmp_path, fake_engine, monkeypatch
) -> None:
    secret = "s3-secret-value-123"
    monkeypatch.setenv(RUN_STORE_OPTIONS_ENV, json.dumps({"secret_key": secret}))
    monkeypatch.setenv(
        "RAY_JOB_CONFIG_JSON_ENV_VAR",
        json.dumps({"runtime_env": {"env_vars": {"OPENAI_API_KEY": "sk-live-abcdef"}}}),
    )
    store = _plan(tmp_path, fake_engine)
    stream = fake_engine.FakeExecutor.stream

    def chatty(self, *args, **kwargs):
        # a UDF's line Ray forwards to the driver, and Ray's coloured warning
        print(f"(Recognize pid=7) key={secret} openai=sk-live-abcdef")
        print("\x1b[33mWARNING\x1b[0m colours", file=sys.stderr)
        yield from stream(self, *args, **kwargs)

    monkeypatch.setattr(fake_engine.FakeExecutor, "stream", chatty)
    assert _main(tmp_path) == 0
    text = _stored(store)
    assert "(Recognize pid=7) key=*** openai=***" in text
    assert secret not in text
    assert "sk-live-abcdef" not in text
    assert "\x1b" not in text
    assert "WARNING colours" in text


def test_a_stopped_driver_keeps_its_log(tmp_path) -> None:
    """Ray stops a job with SIGTERM: the driver copies its log, then dies of the signal."""
    spec = "blocking_pipeline:BlocksAfterTheFirst"
    here = os.path.dirname(__file__)
    sys.path.insert(0, here)
    try:
        fingerprint = pipeline_load.import_factory(spec)().compile().fingerprint
    finally:
        sys.path.remove(here)
    store = RunStore(str(tmp_path / "store"))
    store.write_plan(
        PlanRecord(
            run_id="run",
            pipeline=spec,
            fingerprint=fingerprint,
            sources=[0, 1, 2, 3],
            input_batch_size=2,
            backend="local",
        )
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, *sys.path])}
    cmd = [sys.executable, "-m", "airflow_provider_rayorch.job"]
    cmd += ["--run-store", store.uri, "--run-id", "run"]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the first commit is printed, the second never comes
            if "microbatch 1/2 committed" in line:
                break
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    text = _stored(store)
    assert "microbatch 1/2 committed" in text
    assert "stopped: signal 15 (SIGTERM)" in text
    state = read_run_state(store, "run")  # the driver recorded its own end
    assert (state.state, state.job_status) == ("stopped", "STOPPED")
    assert "SIGTERM" in (state.message or "")
