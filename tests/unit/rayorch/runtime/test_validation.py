"""``Core.validate()``: a typed error naming the broken invariant."""

from __future__ import annotations

from typing import Any

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.runtime.core import Core
from airflow_provider_rayorch.rayorch.runtime.events import (
    BatchFinished,
    MicrobatchDone,
    WorkerAdded,
)
from airflow_provider_rayorch.rayorch.runtime.validation import BrokenInvariant

from ..support import Identity


class Flat(ro.Pipeline):
    def __init__(self) -> None:
        self.rows = ro.RayModule(Identity).ray_options(batch_size=1)

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.rows(doc)


def started() -> Core:
    core = Core(Flat().compile(), [["a", "b"]], clock=lambda: 0.0)
    core.handle(WorkerAdded("w1", 0, 1))
    core.start()
    return core


def test_a_healthy_core_validates_after_every_event() -> None:
    core = started()
    core.validate()
    core.handle(BatchFinished(1, ["A"]))
    core.validate()
    core.handle(BatchFinished(2, ["B"]))
    assert core.finished
    core.validate()


@pytest.mark.no_core_invariants
@pytest.mark.parametrize(
    ("corrupt", "invariant"),
    [
        pytest.param(lambda core: setattr(core.calls[0], "ready", 5), "ready counter", id="ready"),
        pytest.param(
            lambda core: setattr(core._pools[0], "ready", 9), "pool ready counter", id="pool"
        ),
        pytest.param(lambda core: core._batches.clear(), "batches partition", id="batches"),
        pytest.param(
            lambda core: setattr(core.active[0], "outstanding", 7), "outstanding count", id="mb"
        ),
        pytest.param(
            lambda core: setattr(core._workers["w1"], "capacity", 0), "worker capacity", id="cap"
        ),
    ],
)
def test_a_broken_invariant_is_named_in_a_typed_error(corrupt: Any, invariant: str) -> None:
    core = started()
    corrupt(core)
    with pytest.raises(BrokenInvariant) as info:
        core.validate()
    assert info.value.invariant == invariant
    assert invariant in str(info.value)
    # Typed as a lineage bug, and still an AssertionError for test helpers.
    assert isinstance(info.value, ro.InvalidTransition)
    assert isinstance(info.value, AssertionError)


@pytest.mark.no_core_invariants
def test_a_finished_core_checks_what_it_finished_without_keeping_it() -> None:
    core = started()
    core.handle(BatchFinished(1, ["A"]))
    out = core.handle(BatchFinished(2, ["B"]))
    (mb,) = [c.microbatch for c in out if type(c) is MicrobatchDone]
    mb.outputs[0].pop()  # the microbatch the last event finished, short of an output
    with pytest.raises(BrokenInvariant, match="complete outputs"):
        core.validate()
    del out, mb  # the core holds no finished microbatch: nothing is left to check
    core.validate()
    core._admission.microbatches_done -= 1
    with pytest.raises(BrokenInvariant, match="every admitted microbatch done"):
        core.validate()
