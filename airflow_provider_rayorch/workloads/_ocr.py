"""Text detection, crops, reading order and recognition (rapidocr-onnxruntime, offline).

rapidocr-onnxruntime ships its PP-OCR ONNX models inside its wheel, so nothing is
downloaded at run time. Detection and recognition run as separate steps so that a
pipeline can batch recognition across pages and documents.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from airflow_provider_rayorch.workloads._deps import MissingDependencyError, require

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["OcrEngine", "crop_quad", "reading_order", "to_bgr"]


def to_bgr(image: np.ndarray) -> np.ndarray:
    """A 3-channel ``uint8`` view of a grayscale or colour image."""
    if image.ndim == 2:
        return np.repeat(image[:, :, None], 3, axis=2)
    if image.shape[2] == 4:
        return np.ascontiguousarray(image[:, :, :3])
    return image


def crop_quad(image: np.ndarray, quad: np.ndarray) -> np.ndarray:
    """Cut the (possibly rotated) quadrilateral ``quad`` out of ``image`` upright."""
    cv2 = require("cv2", extra="documents", package="opencv-python")
    pts = np.asarray(quad, dtype=np.float32).reshape(4, 2)
    width = int(max(np.linalg.norm(pts[0] - pts[1]), np.linalg.norm(pts[2] - pts[3])))
    height = int(max(np.linalg.norm(pts[0] - pts[3]), np.linalg.norm(pts[1] - pts[2])))
    width, height = max(width, 1), max(height, 1)
    target = np.array([[0, 0], [width, 0], [width, height], [0, height]], dtype=np.float32)
    matrix = cv2.getPerspectiveTransform(pts, target)
    crop = cv2.warpPerspective(
        image, matrix, (width, height), borderMode=cv2.BORDER_REPLICATE, flags=cv2.INTER_CUBIC
    )
    if height >= 1.5 * width:  # vertical text line: lay it down
        crop = np.rot90(crop)
    return np.ascontiguousarray(crop)


def reading_order(boxes: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """Order axis-aligned ``(x0, y0, x1, y1)`` boxes top-to-bottom, left-to-right.

    Boxes whose vertical extents overlap by at least half the smaller height share
    a line. Returns ``(box index, line number)`` pairs in reading order. Single
    column only: multi-column layouts read across columns.
    """
    by_center = sorted(range(len(boxes)), key=lambda i: (boxes[i][1] + boxes[i][3]) / 2)
    lines: list[list[int]] = []
    band = (0.0, 0.0)
    for i in by_center:
        _, y0, _, y1 = boxes[i]
        if lines:
            overlap = min(y1, band[1]) - max(y0, band[0])
            if overlap >= 0.5 * min(y1 - y0, band[1] - band[0]):
                lines[-1].append(i)
                band = (min(band[0], y0), max(band[1], y1))
                continue
        lines.append([i])
        band = (y0, y1)
    ordered: list[tuple[int, int]] = []
    for number, members in enumerate(lines):
        ordered.extend((i, number) for i in sorted(members, key=lambda i: boxes[i][0]))
    return ordered


class OcrEngine:
    """One loaded PP-OCR detector and recognizer; build once per actor."""

    def __init__(self, *, threads: int = 1, max_side: int = 2000) -> None:
        module = require("rapidocr_onnxruntime", extra="documents", package="rapidocr-onnxruntime")
        cv2 = require("cv2", extra="documents", package="opencv-python")
        cv2.setNumThreads(threads)
        self._cv2 = cv2
        self.max_side = max_side
        engine: Any = module.RapidOCR(
            intra_op_num_threads=threads, inter_op_num_threads=1, print_verbose=False
        )
        if not (hasattr(engine, "text_det") and hasattr(engine, "text_rec")):
            raise MissingDependencyError(
                "this rapidocr-onnxruntime has no separate text_det/text_rec steps; "
                "install rapidocr-onnxruntime>=1.3,<2"
            )
        self._engine = engine

    def detect(self, image: np.ndarray) -> list[np.ndarray]:
        """Text-region quadrilaterals (4x2 float arrays, pixel coordinates of ``image``).

        Images whose longer side exceeds ``max_side`` are detected on a downscaled
        copy; the boxes are scaled back.
        """
        height, width = image.shape[:2]
        scale = min(1.0, self.max_side / max(height, width, 1))
        small = image
        if scale < 1.0:
            size = (max(1, round(width * scale)), max(1, round(height * scale)))
            small = self._cv2.resize(image, size, interpolation=self._cv2.INTER_AREA)
        boxes, _ = self._engine.text_det(to_bgr(small))
        if boxes is None:
            return []
        return [np.asarray(box, dtype=np.float32).reshape(4, 2) / scale for box in boxes]

    def recognize(self, crops: Sequence[np.ndarray]) -> list[tuple[str, float]]:
        """Text and confidence for each crop, in input order (batched inside)."""
        if not crops:
            return []
        results, _ = self._engine.text_rec([to_bgr(c) for c in crops])
        return [(str(text), float(score)) for text, score, *_ in results]
