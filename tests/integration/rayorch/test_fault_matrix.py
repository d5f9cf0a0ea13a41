"""The fault matrix (docs/fault-matrix.md): every boundary x every fault ends within
its bound with its documented outcome, nothing lost and nothing duplicated.

Each run goes through the watchdog (``within`` / ``subprocess_within``): past its
bound the test fails in seconds with every thread's stack. UDF invocations are
counted in log files the workers append to (see ``fault_udfs``), never timed.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

import pytest
import ray

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.execution.ray_backend import RayBackend
from airflow_provider_rayorch.runs import driver
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.store import RunStore

from . import fault_udfs as fu
from .lost_objects import lost_object
from .resume_plans import write_resume_plan
from .watchdog import measured_start_s, subprocess_within, wait_for, within

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.usefixtures("no_actors_left")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROWS = list(range(10))
#: One process start with Ray's and the engine's imports, measured on this machine as
#: the module loads (so under the load the suite puts on it then).
MEASURED_START_S = measured_start_s()
#: The watchdogs' room for one actor start (spawn, imports, registration): a multiple of
#: the measured start, never below 20 s. A bound for hangs, not a speed assertion.
START_S = max(20.0, 6 * MEASURED_START_S)
#: The small ``batch_timeout_s`` the cells use (its clock starts when ``run()`` starts).
TIMEOUT_S = 3
#: The cells' ``actor_start_timeout_s``: it covers spawning the worker process too,
#: so it is a multiple of the measured start (a start killed before its constructor ran
#: logs nothing, hence the bounded, not exact, constructor counts below).
START_TIMEOUT_S = max(10, math.ceil(3 * MEASURED_START_S))


def comparable(outputs: list[Any]) -> list[Any]:
    return [(o.outcome.value, o.cause) if isinstance(o, ro.OutputIssue) else o for o in outputs]


def run_ray(seconds: float, what: str, pipeline: ro.Pipeline, rows: list[Any], **kw: Any) -> Any:
    return within(seconds, what, ro.run, pipeline, rows, backend="ray", **kw)


def ran(log_dir: Path, name: str = "run") -> dict[Any, int]:
    """Invocations per logged row (int rows as ints)."""
    return {
        (int(k) if k.lstrip("-").isdigit() else k): v
        for k, v in fu.counts(str(log_dir), name).items()
    }


# -- actor start ---------------------------------------------------------------------------
@pytest.mark.timeout(120)
def test_actor_start_exception_fails_fast(tmp_path: Path) -> None:
    pipeline = fu.One(fu.FaultyInit, (str(tmp_path), "raise"), replicas=2)
    with pytest.raises(ro.ExecutionError) as info:
        run_ray(2 * START_S, "constructor raises", pipeline, ROWS)
    message = str(info.value)
    assert "'model'" in message
    assert "staged exception: model load failed" in message
    assert ran(tmp_path, "init")["init"] <= 2  # no replacement: it would raise again
    assert "run" not in ran(tmp_path)


@pytest.mark.timeout(150)
def test_actor_start_exit_exhausts_the_start_budget(tmp_path: Path) -> None:
    pipeline = fu.One(fu.FaultyInit, (str(tmp_path), "exit"), replicas=1)
    with pytest.raises(ro.ExecutionError) as info:
        run_ray(3 * START_S, "constructor exits", pipeline, ROWS, actor_start_retries=2)
    message = str(info.value)
    assert "'model'" in message
    assert "died while starting" in message
    assert "actor_start_retries" in message  # what to check
    assert "exit" in message.lower()  # Ray's death message is quoted
    assert ran(tmp_path, "init")["init"] == 3  # the start, then the budget of 2


@pytest.mark.timeout(120)
def test_actor_start_exit_once_is_replaced_and_the_run_completes(tmp_path: Path) -> None:
    pipeline = fu.One(fu.FaultyInit, (str(tmp_path), "exit", 1), replicas=1)
    result = run_ray(2 * START_S, "constructor exits once", pipeline, ROWS)
    assert result.outputs == [r * 10 for r in ROWS]
    assert ran(tmp_path, "init")["init"] == 2
    assert ran(tmp_path) == {r: 1 for r in ROWS}
    assert result.metrics["actor_start_failures"] == 1


@pytest.mark.timeout(150)
def test_actor_start_hang_exhausts_the_start_budget(tmp_path: Path) -> None:
    pipeline = fu.One(fu.FaultyInit, (str(tmp_path), "hang"), replicas=1)
    with pytest.raises(ro.ExecutionError) as info:
        run_ray(
            2 * (START_TIMEOUT_S + START_S),
            "constructor hangs",
            pipeline,
            ROWS,
            actor_start_timeout_s=START_TIMEOUT_S,
            actor_start_retries=1,
        )
    message = str(info.value)
    assert "'model'" in message
    assert f"did not start within {START_TIMEOUT_S}s" in message
    assert 1 <= ran(tmp_path, "init")["init"] <= 2  # the start and the budget of 1
    assert "run" not in ran(tmp_path)


@pytest.mark.timeout(150)
def test_actor_start_hang_once_is_replaced_and_the_run_completes(tmp_path: Path) -> None:
    pipeline = fu.One(fu.FaultyInit, (str(tmp_path), "hang", 1), replicas=1)
    result = run_ray(
        4 * (START_TIMEOUT_S + START_S),
        "constructor hangs once",
        pipeline,
        ROWS,
        actor_start_timeout_s=START_TIMEOUT_S,
    )
    assert result.outputs == [r * 10 for r in ROWS]
    assert 2 <= ran(tmp_path, "init")["init"] <= 4  # within the default budget of 3
    assert ran(tmp_path) == {r: 1 for r in ROWS}


# -- batch run -------------------------------------------------------------------------------
def faulty_run(tmp_path: Path, mode: str, times: int, **options: Any) -> fu.One:
    return fu.One(fu.FaultyRun, (str(tmp_path), mode, 5, times), **options)


@pytest.mark.timeout(120)
def test_batch_exception_once_is_retried(tmp_path: Path) -> None:
    pipeline = faulty_run(tmp_path, "raise", 1, batch_size=4, replicas=2)
    result = run_ray(START_S + 30, "run() raises once", pipeline, ROWS)
    assert result.outputs == [r * 10 for r in ROWS]
    counts = ran(tmp_path)
    assert counts[5] == 2
    assert set(counts) == set(ROWS)
    twice = [r for r, n in counts.items() if n == 2]
    assert all(n in (1, 2) for n in counts.values()), counts
    assert len(twice) <= 4, counts


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "recovery",
    [
        pytest.param(ro.RecoveryPolicy.retry_batch(), id="default"),
        pytest.param(ro.RecoveryPolicy.isolate_tail(), id="isolate_tail"),
    ],
)
def test_batch_exception_always_fails_the_row_alone(
    tmp_path: Path, recovery: ro.RecoveryPolicy
) -> None:
    pipeline = faulty_run(tmp_path, "raise", -1, batch_size=4, recovery=recovery)
    result = run_ray(START_S + 30, "run() always raises", pipeline, ROWS)
    for row, out in zip(ROWS, result.outputs, strict=True):
        if row == 5:
            assert isinstance(out, ro.OutputIssue)
            assert out.outcome is ro.ItemOutcome.FAILED
            assert "staged exception: row 5" in (out.cause or "")
            assert (out.cause or "").startswith("x[5]")
        else:
            assert out == row * 10
    assert set(ran(tmp_path)) == set(ROWS)


@pytest.mark.timeout(120)
def test_batch_exception_under_abort_raises(tmp_path: Path) -> None:
    pipeline = faulty_run(tmp_path, "raise", -1, batch_size=4, recovery=ro.RecoveryPolicy.abort())
    with pytest.raises(ro.ExecutionError, match="staged exception: row 5"):
        run_ray(START_S + 30, "run() raises under abort()", pipeline, ROWS)
    assert ran(tmp_path)[5] == 1  # abort: no retry


@pytest.mark.timeout(150)
def test_batch_exit_once_reruns_the_batch_on_a_replacement(tmp_path: Path) -> None:
    # One batch per actor: a death is the batch it ran (see the pipelined cell below).
    # Processes of their own: a death loses its own actor's batch only (in the default
    # shared process it would lose the other replica's too: test_shared_processes.py).
    pipeline = faulty_run(
        tmp_path, "exit", 1, batch_size=1, replicas=2, max_batches_in_flight=1, share_process=False
    )
    result = run_ray(2 * START_S + 30, "run() exits once", pipeline, ROWS)
    assert result.outputs == [r * 10 for r in ROWS]
    assert ran(tmp_path) == {r: 2 if r == 5 else 1 for r in ROWS}
    assert result.metrics["workers_lost"] >= 1
    assert result.lineage()["grains"]["retried"] >= 1


def only_row_5_fails(result: Any, counts: dict[Any, int], cause: str) -> None:
    """Row 5 FAILS with ``cause`` in its cause; every other row is PRESENT (x 10)."""
    for row, out in zip(ROWS, result.outputs, strict=True):
        if row == 5:
            assert isinstance(out, ro.OutputIssue)
            assert out.outcome is ro.ItemOutcome.FAILED
            assert cause in (out.cause or "")
        else:
            assert out == row * 10, f"row {row} (invocations per row: {counts})"


def always_exits(tmp_path: Path, in_flight: int) -> tuple[dict[Any, int], Any]:
    """Row 5 kills its actor every time, under ``infra_retries=1``: it FAILS, every
    other row is PRESENT. Returns the invocations per row and the result."""
    policy = ro.RecoveryPolicy.retry_batch(1, infra_retries=1)
    pipeline = faulty_run(
        tmp_path,
        "exit",
        -1,
        batch_size=1,
        replicas=2,
        recovery=policy,
        max_batches_in_flight=in_flight,
        # Batches queued on an actor of its own: a slot of the default shared process
        # holds one at a time (that cell: test_shared_processes.py).
        share_process=False,
    )
    result = run_ray(4 * START_S + 30, "run() always exits", pipeline, ROWS)
    counts = ran(tmp_path)
    only_row_5_fails(result, counts, "infra_retries=1 exhausted")
    return counts, result


@pytest.mark.timeout(180)
def test_batch_exit_always_fails_the_row_after_its_infra_retries(tmp_path: Path) -> None:
    # One batch per actor: each death is charged to the row that caused it, exactly.
    counts, _ = always_exits(tmp_path, in_flight=1)
    assert counts == {r: 2 if r == 5 else 1 for r in ROWS}


@pytest.mark.timeout(180)
def test_batch_exit_always_with_batches_queued_charges_an_innocent_row_at_most_once(
    tmp_path: Path,
) -> None:
    # Two batches per actor: a batch that finished just before the death can lose its
    # reply with the actor, and then it is the one charged (the oldest in flight). So
    # a row beside row 5 may run twice, and row 5 then needs one more death. Never
    # more: every Grain that was on a dead actor runs alone (docs/engine-api.md).
    counts, result = always_exits(tmp_path, in_flight=2)
    assert set(counts) == set(ROWS)
    again = [r for r in ROWS if r != 5 and counts[r] != 1]
    # Either row 5 was charged at its first death, or one innocent row was (its reply
    # lost) and row 5 died once more, alone: never an innocent row charged twice.
    assert (counts[5], len(again)) in {(2, 0), (3, 1)}, counts
    assert all(counts[r] == 2 for r in again), counts
    assert result.metrics["workers_lost"] == counts[5]


@pytest.mark.timeout(150)
def test_batch_hang_fails_the_row_alone_under_isolate_tail(tmp_path: Path) -> None:
    pipeline = faulty_run(
        tmp_path,
        "hang",
        -1,
        batch_size=2,
        replicas=1,
        batch_timeout_s=TIMEOUT_S,
        recovery=ro.RecoveryPolicy.isolate_tail(),
    )
    # isolate_tail: the try, its retry, then the split-off row: 3 timeouts and 3 kills.
    result = run_ray(3 * (TIMEOUT_S + START_S) + 30, "run() hangs", pipeline, ROWS)
    for row, out in zip(ROWS, result.outputs, strict=True):
        if row == 5:
            assert isinstance(out, ro.OutputIssue)
            assert out.outcome is ro.ItemOutcome.FAILED
            assert out.cause == f"x[5]: batch_timeout_s={TIMEOUT_S} exceeded"
        else:
            assert out == row * 10
    counts = ran(tmp_path)
    assert set(counts) == set(ROWS)
    assert result.metrics["batches_timed_out"] >= 3


@pytest.mark.timeout(200)
def test_batch_hang_fails_its_row_alone_and_resends_the_queued_batch_without_charge(
    tmp_path: Path,
) -> None:
    """Row 5 hangs in one batch with row 4; 6, 7 wait behind it on the same actor. Under
    the default policy the hung batch is retried, then split: row 5 FAILS alone, row 4
    is PRESENT; the queued batch runs once on a replacement, without an infra-retry
    charge (``infra_retries=0`` would FAIL it otherwise)."""
    rows = [4, 5, 6, 7]
    pipeline = faulty_run(
        tmp_path,
        "hang",
        -1,
        batch_size=2,
        replicas=1,
        max_batches_in_flight=2,
        batch_timeout_s=TIMEOUT_S,
        recovery=ro.RecoveryPolicy.retry_batch(1, infra_retries=0),
    )
    # the try, its retry, then row 5 alone: 3 timeouts and 3 kills
    result = run_ray(3 * (TIMEOUT_S + START_S) + 30, "run() hangs, one queued", pipeline, rows)
    cause = f"batch_timeout_s={TIMEOUT_S} exceeded"
    assert comparable(result.outputs) == [40, ("failed", f"x[1]: {cause}"), 60, 70]
    counts = ran(tmp_path)
    assert counts[6] == 1
    assert counts[7] == 1
    assert counts[5] == 3  # the try, its retry, then alone


# -- withdrawal ------------------------------------------------------------------------------
@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    path = tmp_path / "log"
    path.mkdir()
    return path


@pytest.fixture
def signal_after_withdrawal(tmp_path: Path, log_dir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The withdrawals wait until the in-flight sibling has started (it logged its
    page and now waits for the signal), each is acknowledged by the actor before the
    loop goes on, and once both doomed siblings (the in-flight one and the queued one)
    are withdrawn the file the in-flight sibling waits for is created."""
    signal_file = str(tmp_path / "withdrawn")
    withdrawn: list[int] = []

    def withdraw_then_signal(self: Any, command: Any) -> None:
        wait_for(lambda: ran(log_dir).get("fault", 0) >= 1, 60, "the in-flight sibling starts")
        actor = self._actors[command.worker]
        ray.get(self._withdraw_call(actor, command))
        withdrawn.append(command.batch)
        if len(withdrawn) == 2:
            open(signal_file, "w").close()

    monkeypatch.setattr(RayBackend, "_withdraw", withdraw_then_signal)
    return signal_file


@pytest.mark.timeout(150)
@pytest.mark.parametrize(
    ("mode", "bound"),
    [
        pytest.param("raise", START_S + 30, id="exception"),
        pytest.param("exit", 2 * START_S + 30, id="exit"),
        pytest.param("hang", 2 * START_S + TIMEOUT_S + 30, id="hang"),
    ],
)
def test_withdrawal(log_dir: Path, signal_after_withdrawal: str, mode: str, bound: float) -> None:
    """doc 0: page 0 is a GroupFailure, page 1 is in flight and fails (``mode``) once
    the withdrawal reached the actor, page 2 is queued and withdrawn; doc 1 waits
    behind them on the same actor."""
    pipeline = fu.Siblings(
        str(log_dir), mode, signal_after_withdrawal, TIMEOUT_S if mode == "hang" else None
    )
    docs = [["fail", "fault", "skip"], ["ok"]]
    result = run_ray(bound, f"withdrawal, in-flight sibling: {mode}", pipeline, docs)
    assert comparable(result.outputs) == [("suppressed", "doc[0]/page[0]: torn"), ["OK"]]
    counts = ran(log_dir)
    assert counts.get("skip", 0) == 0, f"a withdrawn row ran: {counts}"
    assert counts == {"fail": 1, "fault": 1, "ok": 1}, f"invocations per page: {counts}"


# -- node loss -------------------------------------------------------------------------------
def engine_env() -> dict[str, str]:
    """The environment of a subprocess that starts or joins a Ray of its own."""
    return {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_ADDRESS": "", "PYTHONPATH": ROOT}


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_node_loss_exit() -> None:
    """A worker node of a 3-node cluster is removed without grace after the first
    microbatch (``node_loss_run``, its own process): the outputs equal the local
    reference's, one per source."""
    import json

    from .node_loss_run import NodeLoss

    docs = list(range(24))
    reference = ro.run(NodeLoss(), docs, backend="local", input_batch_size=4).outputs
    expected = [reference[i : i + 4] for i in range(0, len(docs), 4)]
    argv = [sys.executable, "-m", "tests.integration.rayorch.node_loss_run", "--remove-node"]
    done = subprocess_within(300, "node loss run", argv, env=engine_env(), cwd=ROOT)
    line = next((x for x in done.stdout.splitlines() if x.startswith("NODE_LOSS_RESULT ")), None)
    assert done.returncode == 0, done.tail()
    assert line is not None, done.tail()
    got = json.loads(line.split(" ", 1)[1])
    assert got["removed"]
    assert got["metrics"]["workers_lost"] >= 1
    assert got["outputs"] == expected


# -- object loss -----------------------------------------------------------------------------
@pytest.mark.timeout(120)
def test_object_loss_owner_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first batch of ``measure`` finds one input owned by a process that has
    exited: render's batch that made it runs again from lineage, nothing else does."""
    from airflow_provider_rayorch.rayorch.execution.remote_values import RemoteValue

    dead_ref = lost_object()
    original = RayBackend._submit
    sabotaged: list[int] = []

    def submit(self: Any, command: Any, inflight: Any, attempts: int = 0) -> None:
        if command.node.name == "measure" and not sabotaged:
            box = next(v.box for v in command.columns[0] if type(v) is RemoteValue)
            box.ref = dead_ref
            self._boxes[dead_ref.hex()] = box
            sabotaged.append(command.batch)
        original(self, command, inflight, attempts)

    monkeypatch.setattr(RayBackend, "_submit", submit)
    docs = [3, 4, 5, 6, 7]
    local_log = tmp_path / "local"
    local_log.mkdir()
    expected = ro.run(fu.Produced(str(local_log)), docs, backend="local").outputs
    ray_log = tmp_path / "ray"
    ray_log.mkdir()
    result = run_ray(START_S + 40, "object loss", fu.Produced(str(ray_log)), docs)
    assert sabotaged
    assert result.outputs == expected
    assert result.metrics["batches_recomputed"] >= 1
    pages = [p for d in docs for p in range(d * 10, d * 10 + 1 + d % 4)]
    measured = ran(ray_log, "measure")
    assert measured == {p + 1: 1 for p in pages}, "measure ran a row twice or not at all"
    rendered = ran(ray_log, "render")
    assert set(rendered) == set(pages)
    again = [p for p, n in rendered.items() if n == 2]
    assert all(n in (1, 2) for n in rendered.values()), rendered
    assert 1 <= len(again) <= 3, f"only the producing batch (3 rows) runs again: {rendered}"


# -- driver kill then resume -------------------------------------------------------------------
N_SOURCES = 16


def store_plan(tmp_path: Path, mode: str, stop: int, active: int) -> tuple[RunStore, Path, Path]:
    store = RunStore(str(tmp_path / "store"))
    log_dir, gate = write_resume_plan(
        store,
        tmp_path,
        mode=mode,
        stop=stop,
        sources=N_SOURCES,
        batch_size=4,
        max_active_input_batches=active,
        ray_init_kwargs={"runtime_env": {"env_vars": {"PYTHONPATH": ROOT}}},
    )
    return store, log_dir, gate


def driver_argv(store: RunStore) -> list[str]:
    address = ray.get_runtime_context().gcs_address
    return [
        sys.executable,
        "-m",
        "airflow_provider_rayorch.job",
        "--run-store",
        store.uri,
        "--run-id",
        "run",
        "--address",
        address,
    ]


def assert_resumed(store: RunStore, log_dir: Path, kept: frozenset[int]) -> None:
    """Every source has one output row; rows of the microbatches committed before the
    fault ran exactly once; no row ran more than twice."""
    assert store.committed("run") == frozenset(range(N_SOURCES // 4))
    values = [r["value"] for r in store.read_outputs("run")]
    assert values == [i * i for i in range(N_SOURCES)]
    summary = plain(store.run_manifest_record("run"))
    assert summary is not None
    assert summary["sources"]["present"] == N_SOURCES
    counts = ran(log_dir)
    assert set(counts) == set(range(N_SOURCES))
    for index in kept:
        for row in range(index * 4, index * 4 + 4):
            assert counts[row] == 1, f"row {row} of committed microbatch {index} recomputed"
    assert max(counts.values()) <= 2, counts


def kill_driver_when(store: RunStore, ready: Any, what: str, logs: Path) -> frozenset[int]:
    """Start a driver, SIGKILL it once ``ready()`` holds; the microbatches committed."""
    import subprocess

    with open(logs, "w") as out:  # a file, not a pipe: a full pipe would stall the driver
        proc = subprocess.Popen(
            driver_argv(store),
            cwd=ROOT,
            env=engine_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 90
        while not ready() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if not ready():
            state = "ended" if proc.poll() is not None else "was still running"
            pytest.fail(
                f"{what} did not happen within 90s; the driver {state}:\n"
                + logs.read_text()[-4000:],
                pytrace=False,
            )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    return store.committed("run")


def resume(store: RunStore) -> None:
    done = subprocess_within(
        120, "the resuming driver", driver_argv(store), env=engine_env(), cwd=ROOT
    )
    assert done.returncode == 0, done.tail()


@pytest.mark.timeout(150)
def test_driver_exception_then_resume(tmp_path: Path) -> None:
    """Row 9 (microbatch 2) raises under ``abort()``: the driver fails; a new driver
    for the same run id commits 2 and 3 and recomputes neither 0 nor 1."""
    store, log_dir, gate = store_plan(tmp_path, "raise", 9, active=1)
    with pytest.raises(ro.ExecutionError, match="staged exception at row 9"):
        within(START_S + 40, "driver that raises", driver.run_plan, store, "run")
    kept = store.committed("run")
    assert kept == frozenset({0, 1})
    assert store.run_manifest_record("run") is None
    gate.touch()
    within(START_S + 40, "resuming driver", driver.run_plan, store, "run")
    assert_resumed(store, log_dir, kept)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_driver_kill_then_resume(tmp_path: Path) -> None:
    """The driver process is SIGKILLed once two microbatches are committed (two in
    flight; row 13 holds microbatch 3 so the kill lands mid-run)."""
    store, log_dir, gate = store_plan(tmp_path, "block", 13, active=2)
    kept = kill_driver_when(
        store,
        lambda: len(store.committed("run")) >= 2,
        "two microbatches committed",
        tmp_path / "driver.log",
    )
    assert {0, 1} <= kept
    assert 3 not in kept
    gate.touch()
    resume(store)
    assert_resumed(store, log_dir, kept)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_driver_hang_killed_then_resume(tmp_path: Path) -> None:
    """Row 9 blocks (no batch_timeout_s): the driver makes no progress past
    microbatch 1; its orchestrator kills it; a new driver resumes."""
    store, log_dir, gate = store_plan(tmp_path, "block", 9, active=1)

    def stuck() -> bool:
        return store.committed("run") == frozenset({0, 1}) and ran(log_dir).get(9, 0) >= 1

    kept = kill_driver_when(store, stuck, "the driver stuck at row 9", tmp_path / "driver.log")
    assert kept == frozenset({0, 1})
    gate.touch()
    resume(store)
    assert_resumed(store, log_dir, kept)
    assert ran(log_dir)[9] == 2  # stuck in the killed driver, run again by the new one
