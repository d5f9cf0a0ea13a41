"""Containment's paired saving against the share of poisoned siblings still queued.

Workload 5 (poisoned documents: every page of one fails with a ``GroupFailure``)
with documents of one length each, run with containment on and off in paired
rounds (this engine, warm). What containment can save is the work of the
poisoned documents' siblings that were not yet running when the first failure
reported: the pages in the driver's queue, and those in batches already sent
whose batch had not started (withdrawn, then skipped). Whether any are left
depends on a document's length against the in-flight window (page-model actors
x batches in flight x batch size), so each point sets the two.

Per point: the *queued share* measured from the engine's counters (the poisoned
siblings the page model did not run with containment, over all poisoned
siblings), its estimate from the layout, the measured paired saving, and the
*bound*: the cost model's saving if exactly the siblings not run are removed,
``1 - ideal(without them) / ideal(all)`` with ``workload.ideal_seconds`` (the
makespan lower bound; the page model is the bottleneck stage, so this is about
the suppressed page-model work over the total page-model work).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypedDict

from .workload import Doc, Workload, ideal_seconds, make_docs

if TYPE_CHECKING:
    from .measure import Measurement

__all__ = ["CurvePoint", "CurveResult", "PointResult", "bound_saving", "layout_estimate", "run"]


@dataclass(frozen=True)
class CurvePoint:
    """One configuration: documents of ``pages`` pages each against a window."""

    label: str
    docs: int
    pages: int
    accelerators: int
    in_flight: int
    poison_share: float = 0.5


class PointResult(TypedDict):
    label: str
    docs: int
    pages_per_doc: int
    accelerators: int
    in_flight: int
    window_pages: int
    pages: int
    poisoned_docs: int
    poisoned_siblings: int
    #: Predicted from the layout: max(0, pages - window) / (pages - 1).
    queued_share_estimate: float
    #: Measured: poisoned siblings the page model did not run with containment / all.
    queued_share: float
    #: The same pages as a share of all pages (the paper's 13.7%).
    queued_of_all_pages: float
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


def layout_estimate(pages: int, window: int) -> float:
    """Share of a poisoned document's siblings beyond the in-flight window."""
    return max(0, pages - window) / (pages - 1) if pages > 1 else 0.0


def bound_saving(w: Workload, docs: list[Doc], not_run: int) -> float:
    """Cost-model saving when ``not_run`` poisoned siblings' page-model work is removed.

    The pages are taken from the poisoned documents (their tails), and the bound
    is the relative drop of the makespan lower bound ``ideal_seconds``."""
    full = ideal_seconds(w, docs)["bound_s"]
    left = not_run
    trimmed = []
    for d in docs:
        cut = min(left, d.pages - 1) if d.poisoned else 0
        left -= cut
        trimmed.append(replace(d, pages=d.pages - cut))
    return round(1 - ideal_seconds(w, trimmed)["bound_s"] / full, 4) if full else 0.0


def _ran(m: Measurement) -> int:
    """Pages the page model ran: dispatched less those withdrawn and skipped."""
    model = m.extra.get("calls", {}).get("model", {})
    return int(model.get("grains") or 0) - int(m.extra.get("rows_skipped") or 0)


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
        not_run = statistics.median(max(0, _ran(b) - _ran(a)) for a, b in zip(on, off, strict=True))
        not_run = min(math.floor(not_run), siblings)
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
                "pages": pages,
                "poisoned_docs": len(poisoned),
                "poisoned_siblings": siblings,
                "queued_share_estimate": round(layout_estimate(p.pages, window), 4),
                "queued_share": round(not_run / siblings, 4) if siblings else 0.0,
                "queued_of_all_pages": round(not_run / pages, 4) if pages else 0.0,
                "saving_mean": round(statistics.fmean(savings), 4) if savings else None,
                "saving_rounds": [round(s, 4) for s in savings],
                "bound": bound_saving(w, docs, not_run),
                "on_s": round(statistics.median(m.e2e_s for m in on), 4),
                "off_s": round(statistics.median(m.e2e_s for m in off), 4),
                "correct": all(m.correct for m in on + off),
            }
        )
    return {"points": out, "rounds": rounds}
