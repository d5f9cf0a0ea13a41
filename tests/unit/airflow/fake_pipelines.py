"""Stand-ins for engine pipelines and the engine, for tests of the Airflow layer.

``FakeEngine`` mimics the part of ``airflow_provider_rayorch.rayorch`` the driver
uses (``Executor.stream`` and microbatch objects); pipelines here compute
``x * x`` per source and let chosen sources FAIL.
"""

from __future__ import annotations

import hashlib
import types
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_rayorch.rayorch.errors import CompileError
from airflow_provider_rayorch.rayorch.outcomes import ItemOutcome, OutputIssue
from airflow_provider_rayorch.rayorch.summary import microbatch_summary

#: (index of every microbatch the fake executor ran), across a test.
RAN: list[int] = []


@dataclass(frozen=True)
class FakePlan:
    fingerprint: str


class Square:
    """Outputs ``x * x``; sources listed in ``poison`` FAIL."""

    salt = "v1"

    def __init__(self, poison: list[int] | None = None, broken: bool = False) -> None:
        self.poison = set(poison or [])
        self.broken = broken

    def compile(self) -> FakePlan:
        if self.broken:
            raise CompileError("Call 'square' mixes Domains doc and page")
        return FakePlan(hashlib.sha256(f"square-{self.salt}".encode()).hexdigest())

    def compute(self, x: Any) -> Any:
        if x in self.poison:
            return OutputIssue(ItemOutcome.FAILED, f"doc[{x}]: poisoned")
        return x * x


class Broken(Square):
    def __init__(self) -> None:
        super().__init__(broken=True)


@dataclass
class FakeMicrobatch:
    index: int
    first_source: int
    count: int
    outputs: list[Any]
    output_names: tuple[str, ...] = ("out",)
    metrics: dict[str, Any] = field(default_factory=dict)

    def lineage(self, max_failed_ratio: float = 0.0) -> dict[str, Any]:
        counts: dict[str, int] = {}
        failures = []
        for offset, item in enumerate(self.outputs):
            outcome = item.outcome.value if isinstance(item, OutputIssue) else "present"
            counts[outcome] = counts.get(outcome, 0) + 1
            if isinstance(item, OutputIssue):
                failures.append(
                    {"source": self.first_source + offset, "outcome": outcome, "cause": item.cause}
                )
        return microbatch_summary(
            index=self.index,
            first_source=self.first_source,
            count=self.count,
            outcome_counts=counts,
            entities={"x": self.count},
            grains={"dispatched": self.count},
            failures=failures,
            elapsed_s=0.01,
            max_failed_ratio=max_failed_ratio,
        )


class CrashAfter(Exception):
    pass


class FakeExecutor:
    #: raise CrashAfter once this many microbatches were yielded (None: never)
    crash_after: int | None = None

    def __init__(
        self, pipeline: Any, address: Any = None, backend: str = "ray", ray_init_kwargs: Any = None
    ) -> None:
        self.pipeline = pipeline

    def __enter__(self) -> FakeExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def stream(
        self,
        column: list[Any],
        *,
        input_batch_size: int,
        max_active_input_batches: int = 1,
        skip_microbatches: frozenset[int] = frozenset(),
    ):
        yielded = 0
        for index, first in enumerate(range(0, len(column), input_batch_size)):
            if index in skip_microbatches:
                continue
            if self.crash_after is not None and yielded >= self.crash_after:
                raise CrashAfter(f"driver killed after {yielded} microbatches")
            chunk = column[first : first + input_batch_size]
            RAN.append(index)
            yield FakeMicrobatch(
                index, first, len(chunk), [self.pipeline.compute(x) for x in chunk]
            )
            yielded += 1


def fake_engine() -> types.SimpleNamespace:
    return types.SimpleNamespace(Executor=FakeExecutor, CompileError=CompileError)
