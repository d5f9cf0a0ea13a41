"""Random pipelines give identical outputs on backend="ray" and backend="local".

The pipelines, per-row behaviours and options come from the engine's property test
(tests/unit/rayorch/test_contract_property.py); here each one runs on both backends
and every output (values, outcomes and causes) must match exactly. Transient
exceptions are turned off: their "fire once" memory lives in each process.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import airflow_provider_rayorch.rayorch as ro
from tests.unit.rayorch.test_contract_property import Builder, Marks, build_pipeline, crc

pytestmark = pytest.mark.usefixtures("no_actors_left")


def steady(spec: Any) -> Any:
    """The same spec with transient exceptions removed from every Call."""
    for cid, (kind, rates, policy, opts) in list(spec.calls.items()):
        spec.calls[cid] = (kind, dataclasses.replace(rates, transient=0), policy, opts)
    return spec


def comparable(outputs: Any, n_ports: int) -> list[list[Any]]:
    ports = list(outputs) if n_ports > 1 else [outputs]
    return [
        [
            (o.outcome.value, o.cause) if isinstance(o, ro.OutputIssue) else ("value", o)
            for o in port
        ]
        for port in ports
    ]


@pytest.mark.timeout(900)
@settings(
    max_examples=6,
    deadline=None,
    derandomize=bool(os.environ.get("CI")),
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(
    data=st.data(),
    sources=st.lists(st.integers(0, 49), min_size=1, max_size=8),
    input_batch_size=st.one_of(st.none(), st.integers(1, 4)),
    max_active=st.integers(1, 3),
)
def test_random_pipelines_agree_across_backends(
    data: st.DataObject,
    sources: list[int],
    input_batch_size: int | None,
    max_active: int,
) -> None:
    spec = steady(Builder(data, group_failures=False).build())
    note(spec.describe())
    columns = [sources, [crc("extra", s) % 5 for s in sources]]
    options = {"input_batch_size": input_batch_size, "max_active_input_batches": max_active}
    local = ro.run(build_pipeline(spec, Marks()), *columns, backend="local", **options)
    remote = ro.run(build_pipeline(spec, Marks()), *columns, backend="ray", **options)
    n = len(spec.outputs)
    assert comparable(remote.outputs, n) == comparable(local.outputs, n)
    assert remote.lineage()["sources"] == local.lineage()["sources"]
