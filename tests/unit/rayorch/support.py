"""Shared helpers of the engine tests: invariant checks and tiny UDFs."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from airflow_provider_rayorch.rayorch.runtime.validation import validate_finished

if TYPE_CHECKING:
    from airflow_provider_rayorch.rayorch.runtime.core import Core

#: ``RAYORCH_HYPOTHESIS_EXPLORE=1``: the suite's exploring step (scripts/test.sh), which
#: tries new examples from the seed it prints.
EXPLORE = os.environ.get("RAYORCH_HYPOTHESIS_EXPLORE") == "1"

#: Hypothesis settings of every engine test: no deadline (CI machines are noisy);
#: derandomized in CI so a red build is reproducible, but in the exploring step.
HYPOTHESIS: dict[str, Any] = {
    "deadline": None,
    "derandomize": bool(os.environ.get("CI")) and not EXPLORE,
    "print_blob": True,
}


# -- invariants ----------------------------------------------------------------
def check_core(core: Core) -> None:
    """Invariants that hold between any two events of a healthy core (``Core.validate``;
    its ``BrokenInvariant`` is an ``AssertionError``)."""
    core.validate()


def check_finished(core: Core) -> None:
    """A core that reported RunFinished holds nothing."""
    validate_finished(core)


# -- tiny UDFs -----------------------------------------------------------------
class Identity:
    def run(self, xs: list[Any]) -> list[Any]:
        return list(xs)


class Double:
    def run(self, xs: list[Any]) -> list[Any]:
        return [2 * x for x in xs]


class Pair:
    def run(self, xs: list[Any], ys: list[Any]) -> list[Any]:
        return list(zip(xs, ys, strict=True))


class RangeOf:
    """x -> [0, 1, ..., x-1]"""

    def run(self, xs: list[Any]) -> list[Any]:
        return [list(range(x)) if isinstance(x, int) else x for x in xs]
