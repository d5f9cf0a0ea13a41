"""Modules that share one actor process (``ray_options(share_process=...)``) on Ray.

The same outputs as processes of their own; one process for all their replicas;
and the fault matrix's start and run cells: a failed start counts once per pool,
a row that kills the process is charged alone, a hung batch kills the process
and fails only its own rows. Each run goes through the watchdog; UDF invocations
are counted in log files (``fault_udfs``), never timed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.execution import actor_pool

from . import fault_udfs as fu
from .test_fault_matrix import START_S, TIMEOUT_S, only_row_5_fails, ran, run_ray

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.usefixtures("no_actors_left")

ROWS = list(range(10))


class PidsBesideAModel(ro.Pipeline):
    """tag (x2) and untag share ``light``; model has processes of its own."""

    def __init__(self) -> None:
        self.tag = ro.RayModule(fu.WithPid).ray_options(
            share_process="light", replicas=2, batch_size=2
        )
        self.untag = ro.RayModule(fu.WithPid).ray_options(share_process="light", batch_size=3)
        self.model = ro.RayModule(fu.WithPid).ray_options(replicas=2, batch_size=2)

    def forward(self, x: Any) -> Any:
        return self.model(self.untag(self.tag(x)))


@pytest.mark.timeout(120)
def test_modules_that_share_a_process_run_in_one_with_the_same_outputs() -> None:
    result = run_ray(2 * START_S + 30, "shared process", PidsBesideAModel(), ROWS)
    tagged = [out[0][0] for out in result.outputs]
    assert [t[0] for t in tagged] == ROWS
    light = {t[1] for t in tagged} | {out[0][1] for out in result.outputs}
    model = {out[1] for out in result.outputs}
    assert len(light) == 1, light  # 3 workers of 2 modules, one process
    assert not light & model
    assert result.metrics["workers_lost"] == 0


def shared_faulty(log_dir: Path, mode: str, times: int, **options: Any) -> fu.SharedPair:
    """first (x2, passes rows on) and a FaultyRun (x2, row 5 fails as ``mode``
    says), in one process."""
    # One batch in flight per slot: the batch a slot held when the process died is
    # the one it ran, so each death is charged exactly (with two, a reply lost with
    # the process can shift the charge: the default-process cell below).
    first = (fu.Unwrap, (), {"replicas": 2, "batch_size": 1, "max_batches_in_flight": 1})
    second = (
        fu.FaultyRun,
        (str(log_dir), mode, 5, times),
        {"replicas": 2, "max_batches_in_flight": 1, **options},
    )
    return fu.SharedPair("light", first, second)


@pytest.mark.timeout(150)
def test_a_row_that_kills_a_shared_process_is_charged_alone(tmp_path: Path) -> None:
    policy = ro.RecoveryPolicy.retry_batch(1, infra_retries=1)
    pipeline = shared_faulty(tmp_path, "exit", -1, batch_size=1, recovery=policy)
    result = run_ray(3 * START_S + 30, "run() kills the shared process", pipeline, ROWS)
    counts = ran(tmp_path)
    only_row_5_fails(result, counts, "infra_retries=1 exhausted")
    # Row 5 ran twice, the second time alone in a drained process: the rows beside
    # it the first time ran again at most once, and none was charged twice.
    assert counts[5] == 2
    assert set(counts) == set(ROWS)
    assert all(n <= 2 for n in counts.values()), counts
    assert result.metrics["workers_lost"] >= 4  # every slot of the process, twice


@pytest.mark.timeout(150)
def test_a_shared_process_that_dies_with_slots_up_and_slots_starting_loses_its_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Row 5 runs alone in the process started after its first death, on a slot that
    # is up while the process's other slots are still starting (``HeldSlotStarts``),
    # and kills it again: a death of a process that started, whichever slot's answer
    # the driver reads first, so row 5 is charged and FAILS; it is no failed start
    # (that hung: the slot that was up, and row 5 on it, were forgotten untold).
    monkeypatch.setattr(actor_pool, "SharedProcess", fu.HeldSlotStarts)
    policy = ro.RecoveryPolicy.retry_batch(1, infra_retries=1)
    pipeline = shared_faulty(tmp_path, "exit", -1, batch_size=1, recovery=policy)
    result = run_ray(4 * START_S + 30, "a shared process dies half started", pipeline, ROWS)
    counts = ran(tmp_path)
    only_row_5_fails(result, counts, "infra_retries=1 exhausted")
    assert counts[5] == 2
    assert result.metrics["actor_start_failures"] == 0


@pytest.mark.timeout(150)
def test_a_shared_process_that_dies_starting_is_replaced_once(tmp_path: Path) -> None:
    first = (fu.Unwrap, (), {"batch_size": 2})
    second = (fu.FaultyInit, (str(tmp_path), "exit", 1), {"replicas": 2, "batch_size": 2})
    pipeline = fu.SharedPair("light", first, second)
    result = run_ray(3 * START_S, "shared process exits starting once", pipeline, ROWS)
    assert result.outputs == [r * 10 for r in ROWS]
    assert ran(tmp_path, "init")["init"] == 3  # the dead start, then both slots
    assert ran(tmp_path) == {r: 1 for r in ROWS}
    # One failed start of the process: once against each of its two pools.
    assert result.metrics["actor_start_failures"] == 2


@pytest.mark.timeout(150)
def test_a_shared_process_that_keeps_dying_starting_exhausts_the_budget(tmp_path: Path) -> None:
    first = (fu.Unwrap, (), {"batch_size": 2})
    second = (fu.FaultyInit, (str(tmp_path), "exit"), {"replicas": 2, "batch_size": 2})
    pipeline = fu.SharedPair("light", first, second)
    with pytest.raises(ro.ExecutionError) as info:
        run_ray(3 * START_S, "shared process always exits", pipeline, ROWS, actor_start_retries=2)
    message = str(info.value)
    assert "died while starting" in message
    assert "actor_start_retries=2" in message
    assert ran(tmp_path, "init")["init"] == 3  # one process start, then the budget of 2


@pytest.mark.timeout(150)
def test_a_hung_batch_in_a_shared_process_fails_its_row_alone(tmp_path: Path) -> None:
    pipeline = shared_faulty(
        tmp_path,
        "hang",
        -1,
        batch_size=2,
        batch_timeout_s=TIMEOUT_S,
        recovery=ro.RecoveryPolicy.isolate_tail(),
    )
    result = run_ray(3 * (TIMEOUT_S + START_S) + 30, "run() hangs", pipeline, ROWS)
    for row, out in zip(ROWS, result.outputs, strict=True):
        if row == 5:
            assert isinstance(out, ro.OutputIssue)
            assert out.outcome is ro.ItemOutcome.FAILED
            assert (out.cause or "").endswith(f"batch_timeout_s={TIMEOUT_S} exceeded")
        else:
            assert out == row * 10
    assert set(ran(tmp_path)) == set(ROWS)
    # Its try and its retry (and a split-off try when its batch held another row).
    assert result.metrics["batches_timed_out"] >= 2


# -- the default: modules that ask Ray for nothing share one process ----------------------
class PidsByDefault(ro.Pipeline):
    """tag (x2) and untag ask for nothing: they share the default process; model
    opts out, and pin asks for a CPU: processes of their own."""

    def __init__(self) -> None:
        self.tag = ro.RayModule(fu.WithPid).ray_options(replicas=2, batch_size=2)
        self.untag = ro.RayModule(fu.WithPid).ray_options(batch_size=3)
        self.model = ro.RayModule(fu.WithPid).ray_options(
            replicas=2, batch_size=2, share_process=False
        )
        self.pin = ro.RayModule(fu.WithPid).ray_options(batch_size=2, num_cpus=0.01)

    def forward(self, x: Any) -> Any:
        return self.pin(self.model(self.untag(self.tag(x))))


@pytest.mark.timeout(120)
def test_by_default_the_modules_that_ask_for_nothing_share_one_process() -> None:
    result = run_ray(2 * START_S + 30, "default shared process", PidsByDefault(), ROWS)
    model_rows = [out[0] for out in result.outputs]
    untag_rows = [row[0] for row in model_rows]
    assert [r[0][0] for r in untag_rows] == ROWS
    light = {r[0][1] for r in untag_rows} | {r[1] for r in untag_rows}
    model = {row[1] for row in model_rows}
    pin = {out[1] for out in result.outputs}
    assert len(light) == 1, light  # 3 workers of 2 modules, one process
    # opted out: processes of its own (one per replica; the rows go to the replicas that
    # are up, so a replica that came up late may have run none of them)
    assert 1 <= len(model) <= 2, model
    assert len(pin) == 1
    assert not light & (model | pin)
    assert not model & pin
    assert result.metrics["workers_lost"] == 0


@pytest.mark.timeout(150)
def test_a_row_that_kills_the_default_process_is_charged_alone(tmp_path: Path) -> None:
    """Two modules that ask for nothing (first x2, FaultyRun x2): one process by default,
    each slot holding two batches. Row 5 kills it every time: every slot's oldest batch
    is charged once, row 5 then runs alone and FAILS; no row is lost, and no innocent
    row is charged twice. A batch that finished just before a death can lose its reply
    with the process and be the one charged, as on a process of its own with two
    batches in flight: then row 5 needs one more death (3 runs), and innocent rows run
    at most twice."""
    policy = ro.RecoveryPolicy.retry_batch(1, infra_retries=1)
    first = (fu.Unwrap, (), {"replicas": 2, "batch_size": 1})
    second = (fu.FaultyRun, (str(tmp_path), "exit", 5, -1), {"replicas": 2, "batch_size": 1})
    pipeline = fu.SharedPair(None, first, (*second[:2], {**second[2], "recovery": policy}))
    result = run_ray(4 * START_S + 30, "run() kills the default process", pipeline, ROWS)
    counts = ran(tmp_path)
    only_row_5_fails(result, counts, "infra_retries=1 exhausted")
    assert counts[5] in (2, 3), counts
    assert set(counts) == set(ROWS)
    assert all(n <= 2 for r, n in counts.items() if r != 5), counts
    assert result.metrics["workers_lost"] >= 4  # every slot of the process, twice


@pytest.mark.timeout(150)
def test_opting_out_keeps_a_death_to_its_own_process(tmp_path: Path) -> None:
    """The same pipeline with share_process=False: row 5's deaths lose only its own
    actor (one worker lost per death), never the first module's."""
    policy = ro.RecoveryPolicy.retry_batch(1, infra_retries=1)
    first = (fu.Unwrap, (), {"replicas": 2, "batch_size": 1})
    second = (fu.FaultyRun, (str(tmp_path), "exit", 5, -1), {"replicas": 2, "batch_size": 1})
    pipeline = fu.SharedPair(False, first, (*second[:2], {**second[2], "recovery": policy}))
    result = run_ray(4 * START_S + 30, "run() kills its own process", pipeline, ROWS)
    counts = ran(tmp_path)
    only_row_5_fails(result, counts, "infra_retries=1 exhausted")
    # Two batches in flight per actor: row 5 runs twice, or three times when a reply
    # lost with the actor shifted the first charge to one innocent row (run twice).
    again = [r for r in ROWS if r != 5 and counts[r] != 1]
    assert (counts[5], len(again)) in {(2, 0), (3, 1)}, counts
    assert result.metrics["workers_lost"] == counts[5]  # one worker per death
