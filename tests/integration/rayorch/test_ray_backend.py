"""backend="ray" does exactly what the local reference backend does, and survives faults."""

from __future__ import annotations

import random
import threading
from typing import TYPE_CHECKING, Any

import pytest
import ray

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.errors import ResourceUnavailableError
from airflow_provider_rayorch.rayorch.execution.ray_backend import RayBackend
from airflow_provider_rayorch.rayorch.execution.shared_process import actor_of

from .udfs import DiePipeline, Docs, FanSlow, Gate, Gated, Grouped, Identity

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.usefixtures("no_actors_left")

DOCS = [3, 5, 9, -1, 12, 0, 26, 6, 13, 20, 2, 39]


def as_comparable(outputs: list[Any]) -> list[Any]:
    return [(o.outcome.value, o.cause) if isinstance(o, ro.OutputIssue) else o for o in outputs]


@pytest.mark.parametrize(
    ("batch", "replicas", "batching", "in_flight"),
    [
        pytest.param(1, 1, "any_parent", 1, id="one-by-one"),
        pytest.param(4, 2, "any_parent", 2, id="mixed-parents"),
        pytest.param(3, 2, "single_parent", 3, id="single-parent"),
    ],
)
def test_ray_outputs_equal_local(batch: int, replicas: int, batching: str, in_flight: int) -> None:
    expected = ro.run(Docs(), DOCS, backend="local")
    got = ro.run(
        Docs(batch, replicas, batching, in_flight),
        DOCS,
        backend="ray",
        input_batch_size=5,
        max_active_input_batches=2,
    )
    assert as_comparable(got.outputs) == as_comparable(expected.outputs)
    assert got.lineage()["sources"] == expected.lineage()["sources"]
    issues = [o for o in got.outputs if isinstance(o, ro.OutputIssue)]
    assert {o.outcome for o in issues} == {ro.ItemOutcome.FAILED, ro.ItemOutcome.SUPPRESSED}


def test_existing_ray_is_used_and_left_running() -> None:
    assert ray.is_initialized()
    result = ro.run(Docs(), DOCS[:4], backend="ray")
    assert ray.is_initialized()
    assert result.metrics["backend"] == "ray"


def test_executor_keeps_pools_warm_across_runs() -> None:
    with ro.Executor(Docs(), backend="ray") as executor:
        backend = executor._backend
        actors_before = dict(backend._actors)  # type: ignore[union-attr]
        first = executor.run(DOCS, input_batch_size=4)
        second = executor.run(DOCS, input_batch_size=6, max_active_input_batches=2)
        assert dict(backend._actors) == actors_before  # type: ignore[union-attr]
    assert as_comparable(first.outputs) == as_comparable(second.outputs)


def test_actors_start_a_few_at_a_time_and_join_runs_as_they_come_up() -> None:
    expected = ro.run(Docs(replicas=3), DOCS, backend="local")
    # Processes of their own (by default these modules would share one process).
    pipeline = Docs(replicas=3, share=False)
    with ro.Executor(pipeline, backend="ray", actor_start_concurrency=1) as executor:
        backend: Any = executor._backend
        # open() returned with one actor per pool; the page pool's other two start later.
        assert sorted(k.split("#")[0] for k in backend._up) == ["join", "page", "split"]
        assert len(backend._starting) == 1
        first = executor.run(DOCS, input_batch_size=4)
        executor.warm_up(timeout_s=300)
        assert not backend._starting
        second = executor.run(DOCS, input_batch_size=4)
        page_module = next(m.id for m in executor.plan.modules if m.name == "page")
        assert len(executor.last_core.workers_of(page_module)) == 3
    assert as_comparable(first.outputs) == as_comparable(expected.outputs)
    assert as_comparable(second.outputs) == as_comparable(expected.outputs)


def test_actor_start_concurrency_must_be_positive() -> None:
    with pytest.raises(ValueError, match="actor_start_concurrency"):
        ro.Executor(Docs(), backend="ray", actor_start_concurrency=0).open()


def test_stream_yields_each_microbatch_with_its_summary() -> None:
    with ro.Executor(Docs(), backend="ray") as executor:
        parts = list(executor.stream(DOCS, input_batch_size=4, max_active_input_batches=2))
    assert sorted(p.index for p in parts) == [0, 1, 2]
    for part in parts:
        summary = part.lineage()
        assert summary["microbatch"] == {
            "index": part.index,
            "first_source": 4 * part.index,
            "count": 4,
        }
        assert summary["sources"]["total"] == 4
        assert len(part.outputs) == 4


def test_unsatisfiable_resources_fail_fast() -> None:
    class NeedsGpu(ro.Pipeline):
        def __init__(self) -> None:
            self.m = ro.RayModule(Identity).ray_options(num_gpus=1)

        def forward(self, x: Any) -> Any:
            return self.m(x)

    with pytest.raises(ResourceUnavailableError, match="no node"):
        ro.run(NeedsGpu(), [1, 2], backend="ray")


def test_unknown_ray_options_pass_through_to_ray() -> None:
    class Bad(ro.Pipeline):
        def __init__(self) -> None:
            self.m = ro.RayModule(Identity).ray_options(not_a_ray_option=3)

        def forward(self, x: Any) -> Any:
            return self.m(x)

    with pytest.raises(ValueError, match="not_a_ray_option"):
        ro.run(Bad(), [1], backend="ray")


def test_group_failure_suppresses_queued_siblings_on_ray() -> None:
    # doc 15 has pages 15..15 (15 % 7 = 1 page)... pick docs with many pages instead.
    docs = [5, 6, 13, 20, 27]  # page counts 5, 6, 6, 6, 6; pages divisible by 5 fail
    result = ro.run(Grouped(), docs, backend="ray")
    local = ro.run(Grouped(), docs, backend="local")
    assert as_comparable(result.outputs) == as_comparable(local.outputs)
    page = next(c for c in result.calls if c["name"] == "page")
    assert page["suppressed"] > 0
    assert result.lineage()["grains"]["suppressed"] == page["suppressed"]
    # docs 6 (pages 6..11) and 27 (27..32) have a page divisible by 5 only at 10 and 30:
    outcomes = [o.outcome if isinstance(o, ro.OutputIssue) else "present" for o in result.outputs]
    assert outcomes == [ro.ItemOutcome.SUPPRESSED] * 5 or "present" in outcomes


def test_rows_queued_at_an_actor_are_skipped_after_a_sibling_group_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Batch 1 fails its document; batch 2 (a sibling) holds the actor until the
    test opens the gate, which it does once the actor has taken the withdrawal of
    batch 3 (another sibling, queued behind): batch 3 never runs its UDF."""
    gate = ray.remote(Gate).options(name="gate").remote()
    withdrawn: list[int] = []

    def withdraw_then_open(self: Any, command: Any) -> None:
        actor = self._actors[command.worker]
        ray.get(self._withdraw_call(actor, command))
        withdrawn.append(command.batch)
        if len(withdrawn) == 2:  # batches 2 and 3: the actor knows both now
            ray.get(gate.open.remote())

    monkeypatch.setattr(RayBackend, "_withdraw", withdraw_then_open)
    try:
        result = ro.run(Gated(), [["fail", "wait", "skip"], ["ok"]], backend="ray")
    finally:
        ray.kill(gate)
    assert as_comparable(result.outputs) == [
        (ro.ItemOutcome.SUPPRESSED.value, "doc[0]/page[0]: torn"),
        ["OK"],
    ]
    assert withdrawn == [2, 3]
    assert result.metrics["rows_skipped"] >= 1  # batch 3 (batch 2 too, had it not started)
    page = next(c for c in result.calls if c["name"] == "page")
    assert page["withdrawn"] == 2
    assert page["suppressed"] == 2


def test_actor_death_inside_udf_is_replaced_and_rerun(tmp_path: Path) -> None:
    rows = list(range(20))
    result = ro.run(DiePipeline(str(tmp_path), (3, 11)), rows, backend="ray")
    assert result.outputs == [r * 10 for r in rows]
    assert result.metrics["workers_lost"] >= 2
    assert result.lineage()["grains"]["retried"] >= 2


def test_infra_retries_exhausted_fails_only_those_rows(tmp_path: Path) -> None:
    rows = list(range(8))
    result = ro.run(
        DiePipeline(str(tmp_path), (5,), always=True, infra_retries=1, batch=1), rows, backend="ray"
    )
    for row, out in zip(rows, result.outputs, strict=True):
        if row == 5:
            assert isinstance(out, ro.OutputIssue)
            assert out.outcome is ro.ItemOutcome.FAILED
            assert "infra_retries=1 exhausted" in (out.cause or "")
        else:
            assert out == row * 10


def kill_randomly(
    executor: ro.Executor, rng: random.Random, stop: threading.Event, kills: list[str]
) -> None:
    backend: Any = executor._backend
    for _ in range(rng.randint(1, 3)):
        stop.wait(rng.uniform(0.05, 0.6))  # random moments; correctness never depends on it
        if stop.is_set():
            return
        actors = [(k, a) for k, a in list(backend._actors.items()) if k.startswith("slow")]
        if actors:
            key, actor = rng.choice(actors)
            # By default split and slow share one process: killing it ends every slot.
            ray.kill(actor_of(actor), no_restart=True)
            kills.append(key)


@pytest.mark.timeout(600)
def test_random_actor_kills_lose_and_duplicate_nothing() -> None:
    docs = list(range(40))
    expected = ro.run(FanSlow(0.0), docs, backend="local").outputs
    total_kills = 0
    with ro.Executor(FanSlow(0.01), backend="ray") as executor:
        for seed in range(20):
            rng = random.Random(seed)
            stop = threading.Event()
            kills: list[str] = []
            killer = threading.Thread(target=kill_randomly, args=(executor, rng, stop, kills))
            killer.start()
            try:
                result = executor.run(docs, input_batch_size=10, max_active_input_batches=2)
            finally:
                stop.set()
                killer.join()
            assert result.outputs == expected, f"seed {seed}: outputs differ after kills {kills}"
            total_kills += len(kills)
    assert total_kills > 0


def run_module(module: str, tag: str, *args: str, timeout: float) -> dict[str, Any]:
    """Run ``python -m module`` in a fresh process (it needs its own ``ray.init``) and
    return the JSON of its one output line that starts with ``tag``."""
    import json
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_ADDRESS": ""}
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        start_new_session=True,
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(f"{tag} ")), None)
    assert line is not None, proc.stdout[-2000:] + proc.stderr[-4000:]
    return json.loads(line.split(" ", 1)[1])


def run_node_loss(remove: bool) -> dict[str, Any]:
    args = ["--remove-node"] if remove else []
    return run_module(
        "tests.integration.rayorch.node_loss_run", "NODE_LOSS_RESULT", *args, timeout=400
    )


@pytest.mark.timeout(900)
def test_worker_node_removed_mid_run_gives_identical_outputs() -> None:
    undisturbed = run_node_loss(remove=False)
    disturbed = run_node_loss(remove=True)
    assert disturbed["removed"]
    assert disturbed["metrics"]["workers_lost"] >= 1
    assert disturbed["outputs"] == undisturbed["outputs"]


def test_lost_payloads_are_recomputed_from_lineage(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first batch of ``measure`` finds its input object lost (its owner died):
    the batch of ``render`` that produced it runs again and ``measure`` goes on."""
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


@pytest.mark.timeout(600)
def test_payloads_stay_in_the_object_store() -> None:
    """2,000 children of 1 MB each pass through; the driver's memory stays far below."""
    import psutil

    from .udfs import BigPayloads

    process = psutil.Process()
    base = process.memory_info().rss
    peak = [base]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.05):
            peak[0] = max(peak[0], process.memory_info().rss)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        result = ro.run(
            BigPayloads(), [50] * 40, backend="ray", input_batch_size=10, max_active_input_batches=2
        )
    finally:
        stop.set()
        sampler.join()
    data = 2000 * (1 << 20)
    assert result.outputs[0] == [(1 << 20) + k % 251 for k in range(50)]
    growth = peak[0] - base
    assert growth < data / 8, f"driver grew by {growth / 2**20:.0f} MB for 2000 MB of payloads"


def test_pools_asking_more_than_the_cluster_fail_fast() -> None:
    class Overbooked(ro.Pipeline):
        def __init__(self) -> None:
            self.m = ro.RayModule(Identity).ray_options(replicas=3, num_cpus=1)

        def forward(self, x: Any) -> Any:
            return self.m(x)

    with pytest.raises(ResourceUnavailableError, match="together need more"):
        ro.run(Overbooked(), [1, 2], backend="ray")


@pytest.mark.timeout(300)
def test_a_run_starts_and_stops_its_own_ray_with_init_kwargs() -> None:
    seen = run_module("tests.integration.rayorch.owned_ray_run", "OWNED_RAY", timeout=280)
    assert seen == {"cpus": [1.0, 1.0], "inside": True, "after": False}
