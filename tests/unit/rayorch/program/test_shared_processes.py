"""``ray_options(share_process=...)``: what may share one actor process."""

from __future__ import annotations

from typing import Any

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.program.shared_processes import (
    DEFAULT_PROCESS,
    process_groups,
    shared_actor_options,
)

from ..support import Identity


class Two(ro.Pipeline):
    def __init__(self, first: dict[str, Any], second: dict[str, Any]) -> None:
        self.first = ro.RayModule(Identity).ray_options(**first)
        self.second = ro.RayModule(Identity).ray_options(**second)

    def forward(self, x: ro.Port) -> ro.Port:
        return self.second(self.first(x))


def test_members_of_a_process_are_grouped_and_their_cpus_summed() -> None:
    plan = Two(
        {"share_process": "light", "replicas": 2, "num_cpus": 0.25},
        {"share_process": "light", "memory": 100},
    ).compile()
    groups = process_groups(plan.modules)
    assert [m.name for m in groups["light"]] == ["first", "second"]
    assert shared_actor_options(groups["light"]) == {"num_cpus": 0.5, "memory": 100}
    assert "share_process" not in plan.modules[0].options.ray_actor_options


def test_share_process_is_in_the_fingerprint_only_when_set() -> None:
    plain = Two({}, {}).compile().fingerprint
    assert Two({"share_process": None}, {}).compile().fingerprint == plain
    assert Two({"share_process": "light"}, {}).compile().fingerprint != plain


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        pytest.param(
            {"share_process": "light"},
            {"share_process": "light", "num_gpus": 1},
            "module 'second': share_process='light' cannot hold num_gpus",
            id="gpu",
        ),
        pytest.param(
            {"share_process": "light", "resources": {"accel": 1}},
            {},
            "module 'first': share_process='light' cannot hold resources",
            id="custom-resource",
        ),
        pytest.param(
            {"share_process": "light", "runtime_env": {"env_vars": {"A": "1"}}},
            {"share_process": "light"},
            "different runtime_env",
            id="runtime-env",
        ),
        pytest.param(
            {"share_process": "light", "max_concurrency": 4},
            {},
            "sets its own max_concurrency",
            id="max-concurrency",
        ),
        pytest.param({"share_process": ""}, {}, "must be a non-empty name", id="empty"),
        pytest.param({"share_process": 3}, {}, "must be a non-empty name", id="not-a-name"),
    ],
)
def test_what_cannot_share_a_process_is_a_compile_error(
    first: dict[str, Any], second: dict[str, Any], message: str
) -> None:
    with pytest.raises(ro.CompileError, match=message.replace("(", r"\(")):
        Two(first, second).compile()


# -- the default: modules that ask for nothing share one process ---------------------


def _groups(first: dict[str, Any], second: dict[str, Any]) -> dict[str, list[str]]:
    plan = Two(first, second).compile()
    return {name: [m.name for m in ms] for name, ms in process_groups(plan.modules).items()}


def test_modules_that_ask_for_nothing_share_the_default_process() -> None:
    assert _groups({}, {"num_cpus": 0, "replicas": 3}) == {DEFAULT_PROCESS: ["first", "second"]}
    assert _groups({"share_process": None}, {}) == {DEFAULT_PROCESS: ["first", "second"]}


@pytest.mark.parametrize(
    "asks",
    [
        pytest.param({"num_cpus": 0.25}, id="cpus"),
        pytest.param({"num_gpus": 1}, id="gpus"),
        pytest.param({"resources": {"accel": 1}}, id="custom-resource"),
        pytest.param({"memory": 10**9}, id="memory"),
        pytest.param({"runtime_env": {"env_vars": {"A": "1"}}}, id="runtime-env"),
        pytest.param({"batch_timeout_s": 5}, id="batch-timeout"),
        pytest.param({"scheduling_strategy": "DEFAULT"}, id="scheduling"),
        pytest.param({"share_process": False}, id="opt-out"),
    ],
)
def test_a_module_that_asks_for_something_keeps_processes_of_its_own(asks: dict[str, Any]) -> None:
    # The other module alone with 2 replicas still fills the default process.
    assert _groups(asks, {"replicas": 2}) == {DEFAULT_PROCESS: ["second"]}


def test_a_lone_module_with_one_replica_keeps_its_process() -> None:
    """A process of one slot saves no process start."""
    assert _groups({}, {"share_process": False}) == {}


def test_a_named_process_is_not_the_default_one() -> None:
    assert _groups({"share_process": "light"}, {"replicas": 2}) == {
        "light": ["first"],
        DEFAULT_PROCESS: ["second"],
    }


def test_opting_out_is_in_the_fingerprint_and_the_default_is_not() -> None:
    plain = Two({}, {}).compile().fingerprint
    assert Two({"share_process": False}, {}).compile().fingerprint != plain
    assert Two({"share_process": False}, {}).compile().fingerprint == (
        Two({"share_process": False}, {}).compile().fingerprint
    )


def test_batches_in_flight_do_not_keep_a_module_out() -> None:
    """A slot holds its pool's batches in flight, as a process of its own does."""
    assert _groups({"max_batches_in_flight": 4}, {}) == {DEFAULT_PROCESS: ["first", "second"]}
