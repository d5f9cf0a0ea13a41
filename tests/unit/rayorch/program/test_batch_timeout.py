"""``ray_options(batch_timeout_s=...)``: consumed by the engine, checked at compile
time, carried on the plan's module for the Ray backend, never passed to Ray."""

from __future__ import annotations

import math
from typing import Any

import pytest

import airflow_provider_rayorch.rayorch as ro


class Echo:
    def run(self, xs: list[Any]) -> list[Any]:
        return xs


class OneCall(ro.Pipeline):
    def __init__(self, **options: Any) -> None:
        self.echo = ro.RayModule(Echo).ray_options(num_cpus=1, **options)

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.echo(doc)


def test_the_default_is_no_timeout() -> None:
    (module,) = OneCall().compile().modules
    assert module.batch_timeout_s is None
    assert module.options.batch_timeout_s is None


@pytest.mark.parametrize("value", [0.5, 30, 1e6])
def test_a_positive_timeout_is_carried_on_the_plan_module_not_given_to_ray(value: Any) -> None:
    (module,) = OneCall(batch_timeout_s=value).compile().modules
    assert module.batch_timeout_s == float(value)
    assert isinstance(module.batch_timeout_s, float)
    assert module.options.ray_actor_options == {"num_cpus": 1}


@pytest.mark.parametrize("value", [0, -1, True, "10", math.inf, math.nan, [5]])
def test_a_bad_timeout_is_a_compile_error_naming_the_module(value: Any) -> None:
    with pytest.raises(ro.CompileError, match=r"module 'echo': batch_timeout_s must be .*> 0"):
        OneCall(batch_timeout_s=value).compile()


def test_the_timeout_is_part_of_the_fingerprint_like_the_other_pool_options() -> None:
    base = OneCall().compile().fingerprint
    assert OneCall(batch_timeout_s=None).compile().fingerprint == base
    assert OneCall(batch_timeout_s=5).compile().fingerprint != base
    assert OneCall(batch_timeout_s=5).compile().fingerprint == (
        OneCall(batch_timeout_s=5.0).compile().fingerprint
    )
    assert OneCall(replicas=2).compile().fingerprint != base
