"""The Airflow-path plot, drawn with Pillow: one bar per variant, its median parts
stacked from the trigger (seconds), a legend of the parts below."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["draw_bars"]

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]
WIDTH, BAR, GAP = 900, 18, 10
LEFT, RIGHT, TOP = 210, 30, 40


def _step(top: float) -> float:
    """A round tick step giving 4 to 10 ticks up to ``top``."""
    raw = max(top, 1e-9) / 8
    base = 10.0 ** math.floor(math.log10(raw))
    return next(base * m for m in (1, 2, 5, 10) if base * m >= raw)


def draw_bars(path: Path, title: str, bars: dict[str, list[float]], parts: list[str]) -> None:
    """Write the PNG at ``path``: for each name in ``bars`` its values (one per name in
    ``parts``, in order) stacked left to right on one seconds axis."""
    from PIL import Image, ImageDraw

    top = max((sum(v) for v in bars.values()), default=1.0) or 1.0
    plot_h = len(bars) * (BAR + GAP) + GAP
    height = TOP + plot_h + 40 + 16 * len(parts)
    img = Image.new("RGB", (WIDTH, height), "white")
    d = ImageDraw.Draw(img)
    w = WIDTH - LEFT - RIGHT
    step = _step(top)
    scale = w / (math.ceil(top / step) * step)
    d.text((LEFT, 12), title, fill="black")
    tick = 0.0
    while tick * scale <= w + 0.5:
        x = LEFT + tick * scale
        d.line([x, TOP, x, TOP + plot_h], fill="#dddddd")
        d.text((x - 8, TOP + plot_h + 4), f"{tick:g}", fill="black")
        tick += step
    d.text((LEFT + w // 2 - 40, TOP + plot_h + 18), "seconds from the trigger", fill="black")
    for i, (name, values) in enumerate(bars.items()):
        y = TOP + GAP + i * (BAR + GAP)
        d.text((8, y + 3), name, fill="black")
        left = float(LEFT)
        for j, value in enumerate(values):
            right = left + max(value, 0.0) * scale
            if right > left:
                d.rectangle([left, y, right, y + BAR], fill=COLORS[j % len(COLORS)])
            left = right
    d.rectangle([LEFT, TOP, LEFT + w, TOP + plot_h], outline="black")
    for j, part in enumerate(parts):
        ly = TOP + plot_h + 38 + 16 * j
        d.rectangle([LEFT, ly + 2, LEFT + 20, ly + 12], fill=COLORS[j % len(COLORS)])
        d.text((LEFT + 28, ly), part, fill="black")
    img.save(path)
