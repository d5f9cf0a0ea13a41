"""Containment's paired saving against the share of poisoned siblings still queued.

Workload 5 (poisoned documents: every page of one fails with a ``GroupFailure``)
with documents of one length each, run with containment on and off in paired
rounds (this engine, warm). What containment can save is the work of the
poisoned documents' siblings that were not yet running when the first failure
reported: the pages in the driver's queue (or not yet rendered), and those in
batches already sent whose batch had not started (withdrawn, then skipped). Out
of reach are only the batches running: one per page-model actor. Whether any
are left depends on a document's length against that running window
(page-model actors x batch size), so each point sets the two; the batches in
flight decide how many must be withdrawn rather than left in the driver's queue.

Per point: the *queued share* measured from the engine's counters (the poisoned
siblings the page model did not run with containment, over all poisoned
siblings), its estimate from the layout, the measured paired saving, and the
*bound*: the cost model's saving if exactly the siblings not run are removed,
per stage, ``1 - ideal(without them) / ideal(all)`` with
``workload.ideal_seconds`` (the makespan lower bound). Rendering stops only for
the siblings still queued for it when the failure reports (a GroupFailure
suppresses queued Grains of Calls only the failed Call reads); the rest are
rendered, so the bound is capped where rendering becomes the busiest stage.

The default size's base makes the page model the bottleneck (rendering at 40% of
its load), as the accelerator is in the paper's RQ4 setting; one point keeps
workload 1's render costs, where rendering carries about the page model's load
once per-batch overhead counts, to show what that leaves containment.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypedDict

from .workload import Doc, Workload, ideal_seconds, make_docs

if TYPE_CHECKING:
    from .measure import Measurement

__all__ = [
    "CurvePoint",
    "CurveResult",
    "PointResult",
    "bound_saving",
    "estimate_of",
    "layout_estimate",
    "pages_ran",
    "run",
    "running_pages",
]


@dataclass(frozen=True)
class CurvePoint:
    """One configuration: documents of ``pages`` pages each against a window."""

    label: str
    docs: int
    pages: int
    accelerators: int
    in_flight: int
    poison_share: float = 0.5
    #: ``(render_batch, render_per_page)`` instead of the base's, or None.
    render: tuple[int, float] | None = None


class PointResult(TypedDict):
    label: str
    docs: int
    pages_per_doc: int
    accelerators: int
    in_flight: int
    window_pages: int
    #: Pages the page model runs at once (actors x batch): out of containment's reach.
    running_pages: int
    render_batch: int
    render_per_page: float
    pages: int
    poisoned_docs: int
    poisoned_siblings: int
    #: Predicted from the layout: max(0, pages - running) / (pages - 1).
    queued_share_estimate: float
    #: Measured: poisoned siblings the page model did not run with containment / all.
    queued_share: float
    #: The same pages as a share of all pages (the paper's 13.7%).
    queued_of_all_pages: float
    #: Poisoned siblings rendering did not run with containment / all.
    not_rendered_share: float
    saving_mean: float | None
    saving_rounds: list[float]
    bound: float
    on_s: float
    off_s: float
    correct: bool


class CurveResult(TypedDict):
    points: list[PointResult]
    rounds: int


def workload_of(base: Workload, p: CurvePoint) -> Workload:
    """Workload 5 with every document ``p.pages`` long (lognormal with sigma 0)."""
    if p.render is not None:
        batch, per_page = p.render
        base = replace(base, render_batch=batch, cost=replace(base.cost, render_per_page=per_page))
    return replace(
        base.scaled(p.accelerators),
        docs=p.docs,
        mean_pages=float(p.pages),
        sigma=0.0,
        max_pages=max(p.pages, base.max_pages),
        poison_share=p.poison_share,
        poison_ordinal=0,
    )


def window_pages(w: Workload, in_flight: int) -> int:
    return w.accelerators * in_flight * w.model_batch


def running_pages(w: Workload) -> int:
    """Pages the page model runs at once: one batch per actor."""
    return w.accelerators * w.model_batch


def layout_estimate(pages: int, window: int) -> float:
    """Share of a poisoned document's siblings beyond ``window`` pages."""
    return max(0, pages - window) / (pages - 1) if pages > 1 else 0.0


def estimate_of(w: Workload) -> float:
    """Share of a poisoned document's siblings containment can stop: those beyond the
    running batches (when the failure reports, the document fills the window, its
    other pages queued in the driver or in batches sent and not started)."""
    return layout_estimate(round(w.mean_pages), running_pages(w))


def _trim(docs: list[Doc], pages: int) -> list[Doc]:
    """``docs`` less ``pages`` pages taken from the poisoned documents' tails."""
    left = pages
    trimmed = []
    for d in docs:
        cut = min(left, d.pages - 1) if d.poisoned else 0
        left -= cut
        trimmed.append(replace(d, pages=d.pages - cut))
    return trimmed


def bound_saving(w: Workload, docs: list[Doc], not_run: int, not_rendered: int = 0) -> float:
    """Cost-model saving when ``not_run`` poisoned siblings' page-model work and
    ``not_rendered`` siblings' render work are removed.

    The pages are taken from the poisoned documents (their tails), per stage (the
    other stages still run them), and the bound is the relative drop of the
    makespan lower bound ``ideal_seconds``."""
    full = ideal_seconds(w, docs)
    model = ideal_seconds(w, _trim(docs, not_run))["model_s"]
    render = ideal_seconds(w, _trim(docs, not_rendered))["render_s"]
    others = ("split_s", "write_s", "critical_path_s")
    after = max(model, render, *(full[k] for k in others))
    return round(1 - after / full["bound_s"], 4) if full["bound_s"] else 0.0


def _rendered(m: Measurement) -> int:
    return int(m.extra.get("calls", {}).get("render", {}).get("grains") or 0)


def pages_ran(runs: list[Measurement]) -> list[int]:
    """Pages the page model ran in each of one variant's runs (in order): dispatched
    less those withdrawn and skipped (``rows_skipped`` is per run: ``run_variants``
    takes it from the engine's Executor-wide count)."""
    return [
        int(m.extra.get("calls", {}).get("model", {}).get("grains") or 0)
        - int(m.extra.get("rows_skipped") or 0)
        for m in runs
    ]


def run(base: Workload, points: tuple[CurvePoint, ...], rounds: int) -> CurveResult:
    """Each point's paired rounds (containment on vs off) and its bound."""
    from .systems.rayorch import run_variants

    out: list[PointResult] = []
    for p in points:
        w = workload_of(base, p)
        docs = make_docs(w)
        poisoned = [d for d in docs if d.poisoned]
        siblings = sum(d.pages - 1 for d in poisoned)
        runs = run_variants(
            w,
            {
                "on": {"containment": True, "in_flight": p.in_flight},
                "off": {"containment": False, "in_flight": p.in_flight},
            },
            rounds,
        )
        on, off = runs["on"], runs["off"]
        not_run = statistics.median(
            max(0, b - a) for a, b in zip(pages_ran(on), pages_ran(off), strict=True)
        )
        not_run = min(math.floor(not_run), siblings)
        not_rendered = statistics.median(
            max(0, _rendered(b) - _rendered(a)) for a, b in zip(on, off, strict=True)
        )
        not_rendered = min(math.floor(not_rendered), siblings)
        savings = [1 - a.e2e_s / b.e2e_s for a, b in zip(on, off, strict=True) if b.e2e_s]
        pages = sum(d.pages for d in docs)
        window = window_pages(w, p.in_flight)
        out.append(
            {
                "label": p.label,
                "docs": p.docs,
                "pages_per_doc": p.pages,
                "accelerators": p.accelerators,
                "in_flight": p.in_flight,
                "window_pages": window,
                "running_pages": running_pages(w),
                "render_batch": w.render_batch,
                "render_per_page": w.cost.render_per_page,
                "pages": pages,
                "poisoned_docs": len(poisoned),
                "poisoned_siblings": siblings,
                "queued_share_estimate": round(estimate_of(w), 4),
                "queued_share": round(not_run / siblings, 4) if siblings else 0.0,
                "queued_of_all_pages": round(not_run / pages, 4) if pages else 0.0,
                "saving_mean": round(statistics.fmean(savings), 4) if savings else None,
                "saving_rounds": [round(s, 4) for s in savings],
                "not_rendered_share": round(not_rendered / siblings, 4) if siblings else 0.0,
                "bound": bound_saving(w, docs, not_run, not_rendered),
                "on_s": round(statistics.median(m.e2e_s for m in on), 4),
                "off_s": round(statistics.median(m.e2e_s for m in off), 4),
                "correct": all(m.correct for m in on + off),
            }
        )
    return {"points": out, "rounds": rounds}
