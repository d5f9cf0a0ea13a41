"""The shapes of the suite's results: what each section returns and the report reads.

results.json is one ``SuiteResults``; each section's entry has the shape its
``registry.Section`` declares. The types are ``TypedDict``s (the JSON is read
back as plain dicts); the report reads sections through ``section_of``.
Imports nothing but the standard library and ``containment_curve``'s types.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict, cast

from .containment_curve import CurveResult, PointResult

__all__ = [
    "AblationsResult",
    "CurveResult",
    "E2EResult",
    "ModeFigures",
    "NestedResult",
    "OcrResult",
    "OverheadResult",
    "PairedResult",
    "PointResult",
    "ScaleResult",
    "ScalingPoint",
    "ScalingResult",
    "SimulatorResult",
    "StartupVariant",
    "SuiteResults",
    "SystemFigures",
    "TuningResult",
    "section_of",
]


class ModeFigures(TypedDict, total=False):
    """``measure.median_of`` of one system's cold or warm runs (workload 1)."""

    e2e_s: float
    e2e_runs: list[float]
    first_doc_s: float
    busy_fraction: float
    batch_fill: float
    correct: bool
    curve: list[float]
    fraction_of_ideal: float
    driver_cpu_s: float
    host_cpu_busy: float | None
    calls: dict[str, dict[str, Any]]
    rows_skipped: int
    #: Xenna only: the CPU each worker reserves and the pinned workers per stage.
    cpu_per_worker: float
    workers: dict[str, int]


class SystemFigures(TypedDict):
    cold: ModeFigures
    warm: ModeFigures


class E2EResult(TypedDict):
    workload: dict[str, Any]
    pages: int
    ideal: dict[str, float]
    systems: dict[str, SystemFigures]
    ratios: dict[str, dict[str, float]]
    skipped: dict[str, str]
    errors: dict[str, str]
    peer_parallelism: dict[str, int]


class TuningResult(TypedDict, total=False):
    sweep: dict[str, list[dict[str, Any]]]
    best: dict[str, dict[str, Any]]
    skipped: str


class ScalingPoint(TypedDict, total=False):
    accelerators: int
    warm_s: float
    cold_s: float
    speedup: float
    efficiency: float
    sim_s: float
    sim_speedup: float | None
    sim_efficiency: float | None
    ideal_s: float
    ideal_speedup: float | None
    fraction_of_ideal: float
    busy_fraction: float
    batch_fill: float
    host_cpu_busy: float | None
    correct: bool


class OptOutPoint(TypedDict):
    """The largest scaling point again, with the light stages in processes of their own."""

    accelerators: int
    cold_s: float
    warm_s: float
    host_cpu_busy: float | None
    correct: bool


class ScalingResult(TypedDict):
    workload: dict[str, Any]
    pages: int
    points: list[ScalingPoint]
    opt_out: NotRequired[OptOutPoint]


class PairedResult(TypedDict, total=False):
    variants: dict[str, ModeFigures]
    paired_saving: dict[str, Any]
    simulated_saving: float | None
    workload: dict[str, Any]
    poisoned_docs: int
    poisoned_pages: int
    pages: int


class AblationsResult(TypedDict, total=False):
    fifo: PairedResult
    batching: PairedResult
    containment: PairedResult
    containment_in_flight_1: PairedResult


class NestedResult(TypedDict, total=False):
    systems: dict[str, dict[str, Any]]
    skipped: dict[str, str]
    docs: int
    pages: int
    note: str


class OcrResult(TypedDict, total=False):
    systems: dict[str, dict[str, Any]]
    skipped: dict[str, str]


class OverheadResult(TypedDict, total=False):
    pure_core: dict[str, Any]
    noop_on_ray: dict[str, dict[str, Any]]
    noop_grains: int
    noop_command: str
    cold_speedup_vs_paper: float
    warm_speedup_vs_paper: float


class SimulatorResult(TypedDict, total=False):
    config: dict[str, float]
    beside_real: dict[str, dict[str, Any]]
    extrapolation: list[dict[str, Any]]
    extrapolation_gpu_like: list[dict[str, Any]]
    gpu_like_cost: dict[str, float]
    big: dict[str, Any] | None
    pages: int


class ScaleResult(TypedDict, total=False):
    """``scale.run_section``: one entry per (path, sources) run, the growth exponents
    per path, and one entry per waiting-trigger count (``scale_triggers``)."""

    points: list[dict[str, Any]]
    growth: dict[str, dict[str, float | None]]
    triggers: list[dict[str, Any]]
    microbatch: int
    note: str


class StartupVariant(TypedDict):
    cold_s: float
    cold_runs: list[float]
    first_doc_s: float
    correct: bool


class SuiteResults(TypedDict, total=False):
    size: str
    command: str
    environment: dict[str, Any]
    versions: dict[str, str | None]
    errors: dict[str, str]
    section_seconds: dict[str, float]
    suite_seconds: float
    merged: list[dict[str, Any]]
    overhead: OverheadResult
    tuning: TuningResult
    e2e: E2EResult
    scaling: ScalingResult
    ablations: AblationsResult
    containment_curve: CurveResult
    nested: NestedResult
    ocr: OcrResult
    simulator: SimulatorResult
    startup: dict[str, StartupVariant]
    scale: ScaleResult


def section_of(results: dict[str, Any], name: str) -> Any:
    """A section's entry (None when it did not run), typed by the caller's annotation."""
    return cast("Any", results.get(name))
