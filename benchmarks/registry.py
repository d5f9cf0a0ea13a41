"""The suite's sections in one registry: name, what it reads, what it returns.

Each ``Section`` declares the sections whose results it reads (``needs``: their
figures calibrate it, e.g. the simulator's driver costs, or the peers' tuned
input parallelism) and the shape of its result (a ``results`` TypedDict), which
the report reads. ``ordered`` puts the chosen sections in an order where every
need that runs comes first; a need that does not run (``--only``) leaves the
section on its defaults, or on what ``--merge`` kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import airflow_path, driver_start, scale, sections
from . import results as shapes

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from .sizes import Size

__all__ = ["REGISTRY", "SECTIONS", "Section", "ordered"]


@dataclass(frozen=True)
class Section:
    name: str
    #: (size, the results so far, the ``--systems`` choice) -> its result.
    run: Callable[[Size, dict[str, Any], tuple[str, ...] | None], Any]
    #: Sections whose results this one reads.
    needs: tuple[str, ...]
    #: The TypedDict of its result.
    shape: Any
    title: str


def _call(fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(spec: Size, results: dict[str, Any], systems: tuple[str, ...] | None = None) -> Any:
        return fn(spec, results, systems=systems)

    return run


REGISTRY: tuple[Section, ...] = (
    Section("tuning", _call(sections.tuning), (), shapes.TuningResult, "peer tuning (W1)"),
    Section("overhead", _call(sections.overhead), ("tuning",), shapes.OverheadResult, "W4"),
    Section("e2e", _call(sections.e2e), ("tuning",), shapes.E2EResult, "W1 end to end"),
    Section(
        "scaling", _call(sections.scaling), ("overhead", "e2e"), shapes.ScalingResult, "scaling"
    ),
    Section(
        "ablations",
        _call(sections.ablations),
        ("overhead", "e2e"),
        shapes.AblationsResult,
        "ablations",
    ),
    Section(
        "containment_curve",
        _call(sections.containment_curve),
        (),
        shapes.CurveResult,
        "containment curve (W5)",
    ),
    Section("nested", _call(sections.nested), ("tuning",), shapes.NestedResult, "W3"),
    Section("ocr", _call(sections.ocr), (), shapes.OcrResult, "W2"),
    Section(
        "simulator",
        _call(sections.simulator),
        ("overhead", "e2e"),
        shapes.SimulatorResult,
        "simulator",
    ),
    Section("startup", _call(sections.startup), (), dict, "cold start"),
    # tiny sources at scale, each run in a fresh process: benchmarks/scale.py
    Section("scale", scale.run_section, (), shapes.ScaleResult, "scale (issue 28)"),
    # a loopback Ray head of its own, jobs through its Jobs API: benchmarks/driver_start.py
    Section("driver_start", driver_start.run_section, (), dict, "the driver's start"),
    # a loopback Airflow deployment of its own: benchmarks/airflow_path
    Section("airflow_path", airflow_path.run_section, (), dict, "the Airflow path"),
)
BY_NAME = {s.name: s for s in REGISTRY}
SECTIONS = tuple(s.name for s in REGISTRY)


def ordered(names: Iterable[str]) -> list[Section]:
    """The chosen sections, each after the chosen sections it needs (registry order
    otherwise). Raises ``ValueError`` on an unknown name or a cycle of needs."""
    chosen = list(dict.fromkeys(names))
    unknown = [n for n in chosen if n not in BY_NAME]
    if unknown:
        raise ValueError(f"unknown section(s) {unknown}; known: {', '.join(SECTIONS)}")
    done: list[Section] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if any(s.name == name for s in done):
            return
        if name in visiting:
            raise ValueError(f"sections' needs form a cycle through {name!r}")
        visiting.add(name)
        for need in BY_NAME[name].needs:
            if need in chosen:
                visit(need)
        visiting.discard(name)
        done.append(BY_NAME[name])

    for name in sorted(chosen, key=SECTIONS.index):
        visit(name)
    return done
