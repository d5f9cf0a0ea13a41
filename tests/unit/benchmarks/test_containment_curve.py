"""The containment curve's layout estimate, bound and paper-like configuration (no Ray)."""

from __future__ import annotations

from dataclasses import replace

from benchmarks.containment_curve import (
    CurvePoint,
    bound_saving,
    estimate_of,
    pages_ran,
    workload_of,
)
from benchmarks.measure import Measurement
from benchmarks.sizes import SIZES
from benchmarks.workload import Workload, ideal_seconds, make_docs


def test_estimate_counts_only_the_running_batches_as_out_of_reach() -> None:
    """Batches sent but not started are withdrawn, so only one batch per page-model
    actor (8 x 16 = 128 pages) runs anyway, whatever the batches in flight."""
    base = SIZES["default"].curve_base
    two = CurvePoint("a", docs=4, pages=174, accelerators=8, in_flight=2)
    one = replace(two, in_flight=1)
    assert estimate_of(workload_of(base, two)) == estimate_of(workload_of(base, one))
    assert estimate_of(workload_of(base, two)) == (174 - 128) / 173
    assert estimate_of(workload_of(base, replace(two, pages=100))) == 0.0


def test_bound_removes_page_model_work_only() -> None:
    """Containment suppresses the page model's siblings; the render stage still runs
    them, so when it becomes the busiest stage it bounds the saving."""
    base = Workload()
    p = CurvePoint("b", docs=8, pages=768, accelerators=8, in_flight=2)
    w = workload_of(base, p)
    docs = make_docs(w)
    siblings = sum(d.pages - 1 for d in docs if d.poisoned)
    full = ideal_seconds(w, docs)
    assert full["render_s"] < full["model_s"]
    expected = 1 - full["render_s"] / full["model_s"]
    assert abs(bound_saving(w, docs, siblings) - expected) < 1e-3


def test_render_override_applies_to_the_point() -> None:
    p = CurvePoint("c", docs=4, pages=40, accelerators=2, in_flight=1, render=(8, 0.002))
    w = workload_of(SIZES["default"].curve_base, p)
    assert (w.render_batch, w.cost.render_per_page) == (8, 0.002)


def test_paper_like_point_matches_rq4() -> None:
    """26.5% of the poisoned parents' siblings beyond reach, 13.7% of all pages."""
    spec = SIZES["default"]
    (p,) = [q for q in spec.curve if "paper-like" in q.label]
    w = workload_of(spec.curve_base, p)
    docs = make_docs(w)
    siblings = sum(d.pages - 1 for d in docs if d.poisoned)
    share = estimate_of(w)
    assert abs(share - 0.265) < 0.005
    assert abs(share * siblings / sum(d.pages for d in docs) - 0.137) < 0.002
    # The page model is the bottleneck stage, as the accelerator is in the paper.
    figures = ideal_seconds(w, docs)
    assert figures["render_s"] < 0.5 * figures["model_s"]


def _run(grains: int, skipped: int) -> Measurement:
    m = Measurement("this engine", "warm", 1.0, 1, 0, grains)
    m.extra.update({"calls": {"model": {"grains": grains}}, "rows_skipped": skipped})
    return m


def test_pages_ran_subtracts_each_runs_own_skipped_rows() -> None:
    """``run_variants`` stores each run's own ``rows_skipped`` (the engine counts over
    the Executor's life); the page model ran what was dispatched less those."""
    on = [_run(1000, 100), _run(1000, 0), _run(990, 90)]
    assert pages_ran(on) == [900, 1000, 900]


def test_bound_removes_the_rendering_containment_stopped_too() -> None:
    """Siblings whose rendering a GroupFailure stopped leave the render stage's work."""
    w = workload_of(Workload(), CurvePoint("d", docs=8, pages=768, accelerators=8, in_flight=2))
    docs = make_docs(w)
    siblings = sum(d.pages - 1 for d in docs if d.poisoned)
    trimmed = [replace(d, pages=1) if d.poisoned else d for d in docs]
    expected = 1 - ideal_seconds(w, trimmed)["bound_s"] / ideal_seconds(w, docs)["bound_s"]
    assert abs(bound_saving(w, docs, siblings, not_rendered=siblings) - expected) < 1e-3
