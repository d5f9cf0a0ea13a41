"""Minimal plot building blocks: linear scales, nice ticks, a canvas with axes.

A canvas collects shapes as data (:mod:`.model`); the templates draw them as inline
SVG, escaping every text, so no plot is ever a string of markup."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .model import Line, Plot, Polyline, Rect, Shape, Text

__all__ = ["Canvas", "Scale", "duration", "fmt", "nice_ticks", "share", "tick_labels"]


def fmt(value: float) -> str:
    """A compact number: ``12``, ``3.5``, ``0.25``, ``1.2k``."""
    if abs(value) >= 10_000:
        return f"{value / 1000:.0f}k"
    if abs(value) >= 1000:
        return f"{value / 1000:.1f}k"
    if value == int(value):
        return str(int(value))
    return f"{value:.2f}".rstrip("0").rstrip(".") if abs(value) < 10 else f"{value:.1f}"


def duration(seconds: float) -> str:
    """A duration with a unit that keeps small ones visible: ``9 µs``, ``15.2 ms``, ``3 s``."""
    if seconds <= 0:
        return "0 s"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    if seconds < 120:
        return f"{fmt(seconds)} s"
    return f"{seconds / 60:.1f} min"


def share(fraction: float) -> str:
    """A percentage: whole percent from 1 %, two significant digits below, never a false 0."""
    if fraction <= 0:
        return "0%"
    if fraction >= 0.01:
        return f"{fraction:.0%}"
    if fraction >= 1e-4:
        return f"{fraction * 100:.2g}%"
    return "<0.01%"


def tick_labels(ticks: list[float]) -> list[str]:
    """Labels for axis ticks: exact, distinct, with the same number of decimals."""
    if ticks and max(abs(t) for t in ticks) >= 1000:
        compact = [fmt(t) for t in ticks]
        if len(set(compact)) == len(compact):
            return compact
    for decimals in range(10):
        labels = [f"{t:.{decimals}f}" for t in ticks]
        if all(
            abs(float(a) - t) <= 1e-9 * max(1.0, abs(t)) for a, t in zip(labels, ticks, strict=True)
        ):
            return labels
    return [repr(t) for t in ticks]


def nice_ticks(lo: float, hi: float, n: int = 6) -> list[float]:
    """About ``n`` round tick values covering ``[lo, hi]``."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    count = math.floor((hi - first) / step + 1e-9) + 1
    return [round(first + i * step, 10) for i in range(count)]


@dataclass(frozen=True)
class Scale:
    """Maps the domain ``[d0, d1]`` linearly onto the range ``[r0, r1]``."""

    d0: float
    d1: float
    r0: float
    r1: float

    def __call__(self, value: float) -> float:
        span = (self.d1 - self.d0) or 1.0
        return self.r0 + (value - self.d0) / span * (self.r1 - self.r0)


@dataclass
class Canvas:
    """An SVG image with a plot area inside margins; shapes are appended in order."""

    width: int
    height: int
    left: int = 56
    right: int = 16
    top: int = 12
    bottom: int = 36
    shapes: list[Shape] = field(default_factory=list)

    @property
    def x0(self) -> float:
        return float(self.left)

    @property
    def x1(self) -> float:
        return float(self.width - self.right)

    @property
    def y0(self) -> float:
        return float(self.top)

    @property
    def y1(self) -> float:
        return float(self.height - self.bottom)

    def rect(
        self, x: float, y: float, w: float, h: float, fill: str, title: str | None = None
    ) -> None:
        self.shapes.append(
            Rect(x=_r(x), y=_r(y), w=_r(max(w, 0.8)), h=_r(h), fill=fill, title=title or None)
        )

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str, dash: str = "") -> None:
        self.shapes.append(
            Line(x1=_r(x1), y1=_r(y1), x2=_r(x2), y2=_r(y2), stroke=stroke, dash=dash)
        )

    def polyline(self, points: list[tuple[float, float]], stroke: str, label: str = "") -> None:
        if points:
            coords = [(_r(x), _r(y)) for x, y in points]
            self.shapes.append(Polyline(points=coords, stroke=stroke, title=label))

    def text(
        self,
        x: float,
        y: float,
        value: object,
        anchor: str = "start",
        size: int = 11,
        fill: str = "#333",
    ) -> None:
        self.shapes.append(
            Text(x=_r(x), y=_r(y), text=str(value), anchor=anchor, size=size, fill=fill)  # type: ignore[arg-type]
        )

    def x_axis(
        self, scale: Scale, label: str, ticks: list[float] | None = None, unit: float = 1.0
    ) -> None:
        """Ticks and their labels; labels show ``value / unit`` (``unit=1e-3``: in ms)."""
        self.line(self.x0, self.y1, self.x1, self.y1, "#888")
        if ticks is None:
            ticks = [t * unit for t in nice_ticks(scale.d0 / unit, scale.d1 / unit)]
        labels = tick_labels([round(t / unit, 10) for t in ticks])
        for t, text in zip(ticks, labels, strict=True):
            x = scale(t)
            self.line(x, self.y1, x, self.y1 + 4, "#888")
            self.text(x, self.y1 + 15, text, anchor="middle", size=10)
        self.text((self.x0 + self.x1) / 2, self.height - 4, label, anchor="middle")

    def y_axis(self, scale: Scale, label: str, grid: bool = True, counts: bool = False) -> None:
        """``counts``: whole numbers only (no 0.5 Grains on a small plot)."""
        self.line(self.x0, self.y0, self.x0, self.y1, "#888")
        ticks = nice_ticks(scale.d0, scale.d1, 4)
        if counts:
            ticks = [t for t in ticks if t == int(t)]
        for t, text in zip(ticks, tick_labels(ticks), strict=True):
            y = scale(t)
            if grid:
                self.line(self.x0, y, self.x1, y, "#eee")
            self.text(self.x0 - 5, y + 3, text, anchor="end", size=10)
        mid = _r((self.y0 + self.y1) / 2)
        self.shapes.append(Text(x=12.0, y=mid, text=label, anchor="middle", vertical=True))

    def empty(self, message: str) -> None:
        """The plot area's empty state: a frame and one line saying why there is nothing."""
        self.rect(self.x0, self.y0, self.x1 - self.x0, self.y1 - self.y0, "#fafafa")
        self.text(
            (self.x0 + self.x1) / 2, (self.y0 + self.y1) / 2 + 4, message, "middle", 13, "#666"
        )

    def render(self, plot: str, label: str) -> Plot:
        """The plot as data; ``plot`` names it (``data-plot``) for tests and styling."""
        return Plot(
            plot=plot, label=label, width=self.width, height=self.height, shapes=self.shapes
        )


def _r(value: float) -> float:
    """A coordinate at the drawing's resolution (a tenth of a pixel)."""
    return round(float(value), 1)
