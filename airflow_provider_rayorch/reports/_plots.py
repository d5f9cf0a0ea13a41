"""The report's plots as data (:class:`.model.Plot`): actor timelines, queue depth,
batch sizes, completion curve and microbatch spans. Dense data is merged at pixel
resolution, so a plot's size does not grow with the length of the run. The driver
draws the timeline plots (only it has the timeline); the page draws the others from
the run store when it is rendered, so they show the microbatches as they are now."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from ._svg import Canvas, Scale, fmt, share

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from ._data import MicrobatchView
    from .model import Plot

__all__ = [
    "OUTCOME_COLORS",
    "batch_size_plots",
    "busy_timeline",
    "completion_curve",
    "legend",
    "microbatch_spans",
    "queue_depth",
    "span_of",
]

WIDTH = 960
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")
OUTCOME_COLORS = {
    "present": "#2e7d32",
    "success": "#2e7d32",
    "dropped": "#9e9e9e",
    "failed": "#c62828",
    "suppressed": "#ef6c00",
    "pending": "#90caf9",
    "not run": "#e0e0e0",
}
#: Busy-segment colours by how the batch ended.
REPORT_COLORS = {
    "finished": "#1565c0",
    "raised": "#ef6c00",
    "rejected": "#8e24aa",
    "lost": "#c62828",
}
IN_FLIGHT = "#cfd8dc"
#: The empty state of the plots of a run that has not committed anything.
NOTHING_COMMITTED = "no microbatch committed yet"


def _time_axis(canvas: Canvas, scale: Scale) -> None:
    """The time axis in seconds, or in milliseconds when the run is shorter than a second."""
    if scale.d1 - scale.d0 < 1.0:
        canvas.x_axis(scale, "milliseconds since the run started", unit=1e-3)
    else:
        canvas.x_axis(scale, "seconds since the run started")


def _span_text(start: float, end: float) -> str:
    if end < 1.0:
        return f"{fmt(start * 1e3)}-{fmt(end * 1e3)} ms"
    return f"{fmt(start)}-{fmt(end)} s"


def _natural(key: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", key)]


def span_of(timeline: Sequence[Mapping[str, Any]], *extra: float | None) -> float:
    """The time span to draw: the last event (or given time), at least a millisecond."""
    ends = [float(r["t"]) for r in timeline] + [float(e) for e in extra if e is not None]
    return max([1e-3, *ends])


def _merge(intervals: Iterable[tuple[float, float]], scale: Scale) -> list[tuple[float, float]]:
    """Intervals in pixels, merged where they touch at the plot's resolution."""
    merged: list[tuple[float, float]] = []
    for a, b in sorted((scale(a), scale(b)) for a, b in intervals):
        if merged and a <= merged[-1][1] + 0.5:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def busy_timeline(timeline: Sequence[Mapping[str, Any]], span: float) -> Plot:
    """One lane per (Call, actor): busy intervals (by outcome), in flight, idle (blank)."""
    dispatched: dict[Any, float] = {}
    lanes: dict[tuple[str, str], dict[str, list[tuple[float, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    busy_total: dict[tuple[str, str], float] = defaultdict(float)
    calls: list[str] = []
    for r in timeline:
        call = str(r["call"])
        if call not in calls:
            calls.append(call)
        key = (call, str(r["worker"]))
        if r["event"] == "dispatch":
            dispatched[(call, r["batch"])] = float(r["t"])
            lanes[key].setdefault("in flight", [])  # a lane exists from its first dispatch
            continue
        end = float(r["t"])
        start = max(0.0, end - float(r.get("busy_s") or 0.0))
        sent = dispatched.pop((call, r["batch"]), start)
        if sent < start:
            lanes[key]["in flight"].append((sent, start))
        lanes[key][str(r.get("outcome") or "finished")].append((start, max(end, start)))
        busy_total[key] += end - start
    order = sorted(lanes, key=lambda k: (calls.index(k[0]), _natural(k[1])))
    names = {
        key: f"{key[0]} \u00b7 {key[1]} ({share(busy_total[key] / span if span else 0.0)})"
        for key in order
    }
    # room for the longest lane name (about 6.5 px per character at 11 px)
    left = min(420, max(190, 12 + int(6.5 * max((len(n) for n in names.values()), default=0))))
    lane_h, gap = 16, 6
    canvas = Canvas(WIDTH, 24 + len(order) * (lane_h + 2) + len(calls) * gap + 36, left=left)
    scale = Scale(0.0, span, canvas.x0, canvas.x1)
    y, previous = canvas.y0, None
    for key in order:
        call, worker = key
        if call != previous:
            y += gap if previous is not None else 0
            previous = call
        canvas.rect(canvas.x0, y, canvas.x1 - canvas.x0, lane_h, "#f7f7f7")
        for kind in ("in flight", *REPORT_COLORS):
            color = IN_FLIGHT if kind == "in flight" else REPORT_COLORS[kind]
            for a, b in _merge(lanes[key].get(kind, []), scale):
                canvas.rect(a, y, b - a, lane_h, color, title=f"{call} {worker}: {kind}")
        canvas.text(canvas.x0 - 6, y + 12, names[key], anchor="end")
        y += lane_h + 2
    canvas.bottom = int(canvas.height - y - 4)
    _time_axis(canvas, scale)
    label = f"Actor timeline: {len(order)} actor lanes of {len(calls)} Calls"
    return canvas.render("timeline", label)


def queue_depth(timeline: Sequence[Mapping[str, Any]], span: float) -> Plot:
    """Each Call's ready-queue depth after each dispatch (max per pixel), as steps."""
    series: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for r in timeline:
        if r["event"] == "dispatch":
            series[str(r["call"])].append((float(r["t"]), int(r.get("queued") or 0)))
    deepest = max([0, *(q for points in series.values() for _, q in points)])
    if series and deepest == 0:  # a flat line on the axis would look like no data
        canvas = Canvas(WIDTH, 60, bottom=8)
        canvas.empty(
            f"no Grain ever waited: every dispatch of {', '.join(series)} emptied its ready queue"
        )
        return canvas.render("queue", f"Ready-queue depth of {len(series)} Calls: always 0")
    top = max(1, deepest)
    canvas = Canvas(WIDTH, 260)
    xs = Scale(0.0, span, canvas.x0, canvas.x1)
    ys = Scale(0.0, top * 1.05, canvas.y1, canvas.y0)
    canvas.y_axis(ys, "ready Grains", counts=True)
    _time_axis(canvas, xs)
    for i, (call, points) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        binned: dict[int, int] = {}
        for t, q in points:
            px = int(xs(t))
            binned[px] = max(binned.get(px, 0), q)
        line: list[tuple[float, float]] = []
        for px, q in sorted(binned.items()):
            if line:
                line.append((px, line[-1][1]))
            line.append((px, ys(q)))
        canvas.polyline(line, color, label=f"{call}: max {max(q for _, q in points)} ready")
        canvas.rect(canvas.x1 - 180, canvas.y0 + 4 + 14 * i, 10, 10, color)
        canvas.text(canvas.x1 - 165, canvas.y0 + 13 + 14 * i, call)
    return canvas.render("queue", f"Ready-queue depth of {len(series)} Calls")


def _histograms(
    calls: Sequence[Mapping[str, Any]], timeline: Sequence[Mapping[str, Any]]
) -> dict[str, dict[int, int]]:
    hist: dict[str, dict[int, int]] = {}
    for c in calls:
        sizes = c.get("batch_sizes") or {}
        if sizes:
            hist[str(c["name"])] = {int(k): int(v) for k, v in sizes.items()}
    if hist:
        return hist
    for r in timeline:
        if r["event"] == "dispatch":
            h = hist.setdefault(str(r["call"]), {})
            h[int(r["size"])] = h.get(int(r["size"]), 0) + 1
    return hist


def batch_size_plots(
    calls: Sequence[Mapping[str, Any]], timeline: Sequence[Mapping[str, Any]]
) -> list[Plot]:
    """One bar chart per Call: how many batches (RPCs) had each size."""
    out = []
    limits = {str(c["name"]): int(c.get("batch_size") or 0) for c in calls}
    for i, (call, hist) in enumerate(_histograms(calls, timeline).items()):
        biggest = max([*hist, limits.get(call, 0), 1])
        canvas = Canvas(300, 190, left=44, top=22)
        xs = Scale(0.5, biggest + 0.5, canvas.x0, canvas.x1)
        ys = Scale(0.0, max(hist.values()) * 1.1, canvas.y1, canvas.y0)
        canvas.y_axis(ys, "batches", counts=True)
        width = max(1.0, (canvas.x1 - canvas.x0) / biggest - 1)
        for size, n in sorted(hist.items()):
            x = xs(size) - width / 2
            canvas.rect(
                x, ys(n), width, canvas.y1 - ys(n), PALETTE[i % len(PALETTE)], f"{n} x {size}"
            )
        ticks = sorted({1, biggest, *[s for s in hist if len(hist) <= 8]})
        canvas.x_axis(xs, "batch size (Grains)", ticks=[float(t) for t in ticks])
        canvas.text(canvas.x0, 14, f"{call}: {sum(hist.values())} batches", size=12)
        out.append(canvas.render("batch-sizes", f"Batch sizes of {call}"))
    return out


def completion_curve(microbatches: Sequence[MicrobatchView], total: int, span: float) -> Plot:
    """Sources committed over time (all outcomes, and PRESENT only)."""
    done = sorted(
        (mb for mb in microbatches if mb.finished_s is not None),
        key=lambda mb: (mb.finished_s or 0.0, mb.index),
    )
    canvas = Canvas(WIDTH, 260) if done else Canvas(WIDTH, 60, bottom=8)
    if not done:
        canvas.empty(f"{NOTHING_COMMITTED} (0 of {total} sources)")
        return canvas.render("completion", f"Completion curve: {NOTHING_COMMITTED}")
    xs = Scale(0.0, span, canvas.x0, canvas.x1)
    ys = Scale(0.0, max(total, 1) * 1.05, canvas.y1, canvas.y0)
    canvas.y_axis(ys, "sources", counts=True)
    _time_axis(canvas, xs)
    canvas.line(canvas.x0, ys(total), canvas.x1, ys(total), "#999", dash="4 3")
    canvas.text(canvas.x0 + 4, ys(total) - 4, f"{total} sources", size=10, fill="#666")
    for key, color in (("total", "#1565c0"), ("present", OUTCOME_COLORS["present"])):
        n, points = 0, [(xs(0.0), ys(0))]
        for mb in done:
            x = xs(mb.finished_s or 0.0)
            points.append((x, ys(n)))
            n += mb.sources.get(key, mb.count if key == "total" else 0)
            points.append((x, ys(n)))
        points.append((canvas.x1, ys(n)))
        canvas.polyline(points, color, label=f"{'committed' if key == 'total' else key}: {n}")
    canvas.rect(canvas.x1 - 150, canvas.y1 - 40, 10, 10, "#1565c0")
    canvas.text(canvas.x1 - 135, canvas.y1 - 31, "committed")
    canvas.rect(canvas.x1 - 150, canvas.y1 - 24, 10, 10, OUTCOME_COLORS["present"])
    canvas.text(canvas.x1 - 135, canvas.y1 - 15, "present")
    return canvas.render("completion", f"Completion curve: {len(done)} microbatches committed")


def microbatch_spans(microbatches: Sequence[MicrobatchView], span: float) -> Plot:
    """One bar per microbatch from its start to its commit, coloured by state."""
    n = len(microbatches)
    lane = max(3, min(16, 420 // max(n, 1)))
    canvas = Canvas(WIDTH, 12 + n * (lane + 2) + 40, left=70)
    xs = Scale(0.0, span, canvas.x0, canvas.x1)
    y = canvas.y0
    for mb in microbatches:
        color = OUTCOME_COLORS.get(mb.state, "#607d8b")
        if mb.finished_s is not None:
            a = xs(mb.started_s or 0.0)
            tip = f"{mb.name} {mb.state}: {_span_text(mb.started_s or 0.0, mb.finished_s)}"
            canvas.rect(a, y, xs(mb.finished_s) - a, lane, color, tip)
        if lane >= 10:
            canvas.text(canvas.x0 - 6, y + lane - 3, mb.name, anchor="end", size=10)
        y += lane + 2
    canvas.bottom = int(canvas.height - y - 4)
    if not any(mb.finished_s is not None for mb in microbatches):
        canvas.empty(NOTHING_COMMITTED if n else "no sources in this run")
        return canvas.render("microbatches", f"{n} source microbatches: {NOTHING_COMMITTED}")
    _time_axis(canvas, xs)
    return canvas.render("microbatches", f"{n} source microbatches")


def legend(items: Mapping[str, str]) -> list[tuple[str, str]]:
    """A small legend: (name, colour) pairs, drawn as swatches by the template."""
    return list(items.items())
