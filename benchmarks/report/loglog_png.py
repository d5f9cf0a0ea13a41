"""Log-log line panels drawn with Pillow, for the scale plot where matplotlib (the bench
extra) is not installed: decade grid lines, one marked line per series, a legend."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from PIL.Image import Image

__all__ = ["Panel", "Series", "draw"]

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]
WIDTH, HEIGHT = 560, 440
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 36, 150


@dataclass(frozen=True)
class Series:
    label: str
    xs: list[float]
    ys: list[float]


@dataclass(frozen=True)
class Panel:
    title: str
    xlabel: str
    ylabel: str
    series: list[Series]


def _decades(values: list[float]) -> tuple[int, int]:
    lo = math.floor(math.log10(min(values)))
    hi = math.ceil(math.log10(max(values)))
    return lo, max(hi, lo + 1)


def _label(exp: int) -> str:
    value = 10.0**exp
    return f"{value:g}" if -3 <= exp <= 6 else f"1e{exp}"


def _panel(img: Image, x0: int, panel: Panel) -> None:
    from PIL import ImageDraw

    d = ImageDraw.Draw(img)
    points = [(x, y) for s in panel.series for x, y in zip(s.xs, s.ys, strict=True) if y > 0]
    if not points:
        return
    xlo, xhi = _decades([p[0] for p in points])
    ylo, yhi = _decades([p[1] for p in points])
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def at(x: float, y: float) -> tuple[float, float]:
        fx = (math.log10(x) - xlo) / (xhi - xlo)
        fy = (math.log10(y) - ylo) / (yhi - ylo)
        return x0 + LEFT + fx * w, TOP + (1 - fy) * h

    d.rectangle([x0 + LEFT, TOP, x0 + LEFT + w, TOP + h], outline="black")
    for e in range(xlo, xhi + 1):
        x, _ = at(10.0**e, 10.0**ylo)
        d.line([x, TOP, x, TOP + h], fill="#dddddd")
        d.text((x - 12, TOP + h + 4), _label(e), fill="black")
    for e in range(ylo, yhi + 1):
        _, y = at(10.0**xlo, 10.0**e)
        d.line([x0 + LEFT, y, x0 + LEFT + w, y], fill="#dddddd")
        d.text((x0 + 8, y - 6), _label(e), fill="black")
    d.text((x0 + LEFT, 10), panel.title, fill="black")
    d.text((x0 + LEFT + w // 3, TOP + h + 20), panel.xlabel, fill="black")
    d.text((x0 + 8, TOP + h + 36), f"y: {panel.ylabel}", fill="black")
    for i, s in enumerate(panel.series):
        color = COLORS[i % len(COLORS)]
        xy = [at(x, y) for x, y in zip(s.xs, s.ys, strict=True) if y > 0]
        if len(xy) > 1:
            d.line(xy, fill=color, width=2)
        for x, y in xy:
            d.ellipse([x - 3, y - 3, x + 3, y + 3], fill=color)
        ly = TOP + h + 56 + 14 * i
        d.line([x0 + 8, ly + 6, x0 + 28, ly + 6], fill=color, width=2)
        d.text((x0 + 34, ly), s.label, fill="black")


def draw(path: Path, panels: list[Panel]) -> None:
    """Write ``panels`` side by side, log-log, as the PNG at ``path``."""
    from PIL import Image as images

    img = images.new("RGB", (WIDTH * len(panels), HEIGHT), "white")
    for i, panel in enumerate(panels):
        _panel(img, i * WIDTH, panel)
    img.save(path)
