"""Faults on Ray end bounded: actors that die or stall while starting, batches that
hang, withdrawal on a warm Executor, and a dispatch loop that never blocks."""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest
import ray

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.execution.ray_backend import RayBackend

from .test_fault_matrix import START_TIMEOUT_S
from .udfs import (
    ExitOnInit,
    Gate,
    Gated,
    HangOn,
    Identity,
    Nested,
    OneModule,
    RaiseOnInit,
    StuckOnInit,
)

pytestmark = pytest.mark.usefixtures("no_actors_left")


def as_comparable(outputs: list[Any]) -> list[Any]:
    return [(o.outcome.value, o.cause) if isinstance(o, ro.OutputIssue) else o for o in outputs]


# -- actor start ------------------------------------------------------------------
@pytest.mark.timeout(90)
def test_a_constructor_that_kills_its_process_fails_the_run_naming_the_module() -> None:
    with pytest.raises(ro.ExecutionError) as info:
        ro.run(OneModule(ExitOnInit, replicas=2), [1, 2, 3], backend="ray")
    message = str(info.value)
    assert "'model'" in message
    assert "died while starting" in message
    assert "actor_start_retries" in message  # what to check / change


@pytest.mark.timeout(90)
def test_the_start_budget_is_settable() -> None:
    with pytest.raises(ro.ExecutionError, match=r"4 actors of module 'model' died") as info:
        ro.run(OneModule(ExitOnInit), [1], backend="ray", actor_start_retries=3)
    assert "died while starting" in str(info.value)
    with pytest.raises(ro.ExecutionError, match=r"1 actor of module 'model' died"):
        ro.run(OneModule(ExitOnInit), [1], backend="ray", actor_start_retries=0)


@pytest.mark.timeout(90)
def test_a_constructor_exception_still_fails_fast() -> None:
    with pytest.raises(ro.ExecutionError, match="model weights not found") as info:
        ro.run(OneModule(RaiseOnInit, replicas=2), [1], backend="ray")
    assert "'model'" in str(info.value)
    assert "\x1b" not in str(info.value)  # Ray's colours removed


@pytest.mark.timeout(90)
def test_a_constructor_that_never_returns_counts_as_a_failed_start() -> None:
    with pytest.raises(ro.ExecutionError, match=r"did not start within 2s") as info:
        ro.run(
            OneModule(StuckOnInit),
            [1],
            backend="ray",
            actor_start_timeout_s=2,
            actor_start_retries=1,
        )
    assert "'model'" in str(info.value)


@pytest.mark.timeout(150)
def test_time_waiting_for_resources_does_not_count_against_the_start_timeout() -> None:
    """The pool's second actor waits for a CPU the test holds, longer than the start
    timeout, while a run goes on; once the CPU is free it starts, and no start counts
    as failed."""
    import time

    holder = ray.remote(Gate).options(num_cpus=1).remote()
    ray.get(holder.is_open.remote())
    try:
        pipeline = OneModule(Identity, replicas=2, num_cpus=1)
        # the start timeout follows a start measured on this machine in this run
        timeout_s = max(15, START_TIMEOUT_S)
        with ro.Executor(pipeline, backend="ray", actor_start_timeout_s=timeout_s) as executor:
            executor.open()
            time.sleep(timeout_s + 5)  # the scenario: the second actor waits past it
            first = executor.run(["a", "b"])
            ray.kill(holder)
            executor.warm_up(timeout_s=60)
            second = executor.run(["c"])
    finally:
        ray.kill(holder)
    assert first.outputs == ["a", "b"]
    assert second.outputs == ["c"]
    assert second.metrics["actor_start_failures"] == 0


# -- hung batches -------------------------------------------------------------------
@pytest.mark.timeout(150)
def test_a_hanging_row_fails_alone_under_isolate_tail() -> None:
    rows = ["a", "b", "hang", "c", "d"]
    pipeline = OneModule(
        HangOn,
        batch_size=2,
        replicas=1,
        batch_timeout_s=3,
        recovery=ro.RecoveryPolicy.isolate_tail(),
    )
    result = ro.run(pipeline, rows, backend="ray")
    assert as_comparable(result.outputs) == [
        "A",
        "B",
        (ro.ItemOutcome.FAILED.value, "x[2]: batch_timeout_s=3 exceeded"),
        "C",
        "D",
    ]
    assert result.metrics["batches_timed_out"] >= 3


@pytest.mark.timeout(150)
def test_a_hung_batch_fails_only_its_hanging_row_under_the_default_policy() -> None:
    """One actor holds two batches: the first hangs, the second waits behind it. The
    hung batch is retried, then split: the hanging row FAILS alone, its batch-mate is
    PRESENT; the queued batch runs again on the replacement without an infra-retry
    charge (``infra_retries=0`` would FAIL it otherwise)."""
    rows = ["hang", "a", "b", "c"]
    pipeline = OneModule(
        HangOn,
        batch_size=2,
        replicas=1,
        max_batches_in_flight=2,
        batch_timeout_s=3,
        recovery=ro.RecoveryPolicy.retry_batch(1, infra_retries=0),
    )
    result = ro.run(pipeline, rows, backend="ray")
    cause = "batch_timeout_s=3 exceeded"
    assert as_comparable(result.outputs) == [
        (ro.ItemOutcome.FAILED.value, f"x[0]: {cause}"),
        "A",
        "B",
        "C",
    ]


# -- withdrawal on a warm Executor ------------------------------------------------------
def test_withdrawal_reaches_queued_batches_in_every_run_of_a_warm_executor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scenario of test_rows_queued_at_an_actor_are_skipped..., twice on one
    Executor: in both runs the queued sibling is skipped by the actor."""
    withdrawn: list[int] = []
    gates: list[Any] = []

    def withdraw_then_open(self: Any, command: Any) -> None:
        actor = self._actors[command.worker]
        ray.get(self._withdraw_call(actor, command))
        withdrawn.append(command.batch)
        if len(withdrawn) % 2 == 0:  # both queued siblings are known to the actor
            ray.get(gates[-1].open.remote())

    monkeypatch.setattr(RayBackend, "_withdraw", withdraw_then_open)
    skipped = []
    with ro.Executor(Gated(), backend="ray") as executor:
        for _ in range(2):
            gates.append(ray.remote(Gate).options(name="gate").remote())
            try:
                before = executor._backend.metrics()["rows_skipped"]  # type: ignore[union-attr]
                result = executor.run([["fail", "wait", "skip"], ["ok"]])
            finally:
                ray.kill(gates[-1])
            assert as_comparable(result.outputs) == [
                (ro.ItemOutcome.SUPPRESSED.value, "doc[0]/page[0]: torn"),
                ["OK"],
            ]
            skipped.append(result.metrics["rows_skipped"] - before)
    assert all(s >= 1 for s in skipped), f"rows skipped per run: {skipped}"


# -- the dispatch loop never blocks -------------------------------------------------------
class BlockingGets:
    """Records ``ray.get`` calls the engine makes on the driver's main thread that
    could block: on an object not ready yet, or to probe a remote value's length or
    truth."""

    def __init__(self) -> None:
        self.probes: list[str] = []
        self.unready: list[str] = []


@pytest.fixture
def blocking_gets(monkeypatch: pytest.MonkeyPatch) -> BlockingGets:
    seen = BlockingGets()
    real_get = ray.get

    def get(refs: Any, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            frames = []
            frame = sys._getframe(1)
            while frame is not None:
                frames.append(f"{frame.f_code.co_filename}:{frame.f_code.co_name}")
                frame = frame.f_back  # type: ignore[assignment]
            where = " <- ".join(f.rsplit("/", 1)[-1] for f in frames[:4])
            if not any("/rayorch/execution/" in f for f in frames):
                return real_get(refs, *args, **kwargs)  # the test's own gets
            if any("remote_values.py" in f for f in frames):
                seen.probes.append(where)
            listed = refs if isinstance(refs, list) else [refs]
            if listed:
                ready, _ = ray.wait(listed, num_returns=len(listed), timeout=0, fetch_local=False)
                if len(ready) < len(listed):
                    seen.unready.append(where)
        return real_get(refs, *args, **kwargs)

    monkeypatch.setattr(ray, "get", get)
    return seen


@pytest.mark.timeout(120)
def test_structural_probes_of_remote_values_never_fetch(blocking_gets: BlockingGets) -> None:
    docs = [3, 0, 4, 2]
    expected = ro.run(Nested(), docs, backend="local").outputs
    result = ro.run(Nested(), docs, backend="ray")
    assert result.outputs == expected
    assert blocking_gets.probes == []
    assert blocking_gets.unready == []


@pytest.mark.timeout(120)
def test_lost_payloads_are_recomputed_without_blocking_the_loop(
    monkeypatch: pytest.MonkeyPatch, blocking_gets: BlockingGets
) -> None:
    from airflow_provider_rayorch.rayorch.execution import ray_backend
    from airflow_provider_rayorch.rayorch.execution.remote_values import RemoteValue

    from .lost_objects import lost_object
    from .udfs import Twice

    dead_ref = lost_object()
    original = ray_backend.RayBackend._submit
    sabotaged: list[int] = []

    def submit(self: Any, command: Any, inflight: Any, attempts: int = 0) -> None:
        if command.node.name == "measure" and not sabotaged:
            box = next(v.box for v in command.columns[0] if type(v) is RemoteValue)
            box.ref = dead_ref
            self._boxes[dead_ref.hex()] = box
            sabotaged.append(command.batch)
        original(self, command, inflight, attempts)

    monkeypatch.setattr(ray_backend.RayBackend, "_submit", submit)
    docs = [3, 4, 5, 6]
    result = ro.run(Twice(), docs, backend="ray")
    assert sabotaged
    assert result.metrics["batches_recomputed"] >= 1
    assert result.outputs == ro.run(Twice(), docs, backend="local").outputs
    assert blocking_gets.unready == []


@pytest.mark.timeout(120)
def test_lost_outputs_are_recomputed_before_their_microbatch_is_delivered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A microbatch's output object is lost just before the driver fetches it: the
    batch that made it runs again and the microbatch is delivered with its outputs."""
    from airflow_provider_rayorch.rayorch.execution.remote_values import collect_boxes

    from .lost_objects import lost_object
    from .udfs import Twice

    dead_ref = lost_object()
    original = RayBackend._deliver
    sabotaged: list[int] = []

    def deliver(self: Any, mb: Any) -> Any:
        if not sabotaged:
            boxes: dict[int, Any] = {}
            for column in mb.outputs:
                for value in column:
                    collect_boxes(value, boxes)
            box = next(iter(boxes.values()))
            box.ref = dead_ref
            self._boxes[dead_ref.hex()] = box
            sabotaged.append(mb.index)
        return original(self, mb)

    monkeypatch.setattr(RayBackend, "_deliver", deliver)
    docs = [3, 4, 5, 6, 8, 9]
    result = ro.run(Twice(), docs, backend="ray", input_batch_size=2)
    assert sabotaged
    assert result.metrics["batches_recomputed"] >= 1
    assert result.outputs == ro.run(Twice(), docs, backend="local").outputs
