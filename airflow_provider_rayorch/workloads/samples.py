"""Small synthetic inputs with known content: for tests, demos and example DAGs.

``write_text_pdf`` needs ``reportlab``; ``write_scene_video`` needs ``av`` and ``numpy``.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from airflow_provider_rayorch.workloads._deps import require

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Segment", "write_scene_video", "write_text_pdf"]


def write_text_pdf(
    path: str | os.PathLike[str] | None,
    pages: Sequence[Sequence[str]],
    *,
    size: tuple[float, float] = (420.0, 300.0),
    font_size: int = 24,
) -> bytes:
    """Write a PDF with one page per entry of ``pages``, one line per string.

    An empty entry makes a blank page. Returns the PDF's bytes (also written to
    ``path`` when given).
    """
    canvas_mod: Any = require("reportlab.pdfgen.canvas", extra="samples", package="reportlab")
    buffer = io.BytesIO()
    pdf = canvas_mod.Canvas(buffer, pagesize=size)
    _width, height = size
    for lines in pages:
        pdf.setFont("Helvetica-Bold", font_size)
        for number, text in enumerate(lines):
            pdf.drawString(24, height - 48 - number * font_size * 1.8, text)
        pdf.showPage()
    pdf.save()
    data = buffer.getvalue()
    if path is not None:
        with open(path, "wb") as fh:
            fh.write(data)
    return data


@dataclass(frozen=True)
class Segment:
    """One shot of a synthetic video: ``seconds`` long, a bar sweeping or still."""

    seconds: float
    kind: Literal["moving", "static"] = "moving"
    color: tuple[int, int, int] = (40, 90, 200)


def write_scene_video(
    path: str | os.PathLike[str],
    segments: Sequence[Segment],
    *,
    fps: int = 12,
    size: tuple[int, int] = (64, 48),
    codec: str = "libx264",
) -> float:
    """Encode ``segments`` back to back (hard cuts between them); returns the duration.

    Each segment has its own background colour; a ``moving`` one has a white bar
    sweeping across it, a ``static`` one a fixed gradient.
    """
    av: Any = require("av", extra="video")
    np: Any = require("numpy", extra="video")
    width, height = size
    ramp = np.linspace(0, 60, width, dtype=np.float32)[None, :, None]
    with av.open(os.fspath(path), mode="w") as container:
        stream = container.add_stream(codec, rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        if codec == "libx264":
            stream.options = {"crf": "18", "preset": "ultrafast", "tune": "zerolatency"}
        total = 0
        for segment in segments:
            base = np.clip(np.asarray(segment.color, np.float32)[None, None, :] + ramp, 0, 255)
            base = np.broadcast_to(base, (height, width, 3)).astype(np.uint8)
            count = round(segment.seconds * fps)
            for i in range(count):
                frame = base.copy()
                if segment.kind == "moving":
                    left = (i * 3) % width
                    frame[:, left : left + width // 8] = 255
                video_frame = av.VideoFrame.from_ndarray(frame, format="rgb24")
                video_frame.pts = total
                total += 1
                container.mux(stream.encode(video_frame))
        container.mux(stream.encode(None))
    return total / fps
