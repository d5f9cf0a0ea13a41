"""Video decoding, shot-cut detection and frame statistics on top of PyAV and numpy."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from airflow_provider_rayorch.rayorch.errors import RayOrchError, UsageError
from airflow_provider_rayorch.workloads._deps import require

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "VideoError",
    "VideoInfo",
    "find_cuts",
    "frame_features",
    "motion_score",
    "probe_video",
    "sample_frames",
    "scan_video",
    "spans_fixed",
]


class VideoError(RayOrchError):
    """A video cannot be used; ``str()`` is the cause."""


@dataclass(frozen=True)
class VideoInfo:
    """What a full scan learned about a video."""

    fps: float
    width: int
    height: int
    duration_s: float
    frames: int


def _av() -> Any:
    return require("av", extra="video")


def _open(path: object) -> Any:
    if not isinstance(path, str | os.PathLike):
        raise VideoError(f"unsupported video source of type {type(path).__name__}")
    name = os.fspath(path)
    if not os.path.isfile(name):
        raise VideoError(f"cannot open video: no such file {name!r}")
    av = _av()
    try:
        container = av.open(name)
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise VideoError(f"cannot open video: {exc}") from exc
    if not container.streams.video:
        container.close()
        raise VideoError("no video stream")
    return container


def _frames(container: Any) -> Iterator[Any]:
    av = _av()
    stream = container.streams.video[0]
    try:
        for frame in container.decode(stream):
            if frame.time is not None:
                yield frame
    except (av.FFmpegError, ValueError) as exc:
        raise VideoError(f"cannot decode video: {exc}") from exc


def _fps(stream: Any) -> float:
    rate = stream.average_rate or stream.guessed_rate or stream.base_rate
    return float(rate) if rate else 0.0


def _color_hist(frame: Any, width: int) -> np.ndarray:
    height = max(2, round(width * frame.height / max(frame.width, 1)))
    rgb = np.asarray(frame.reformat(width=width, height=height, format="rgb24").to_ndarray())
    levels = (rgb // 64).astype(np.int32)  # 4 levels per channel -> 64 colour bins
    index = levels[..., 0] * 16 + levels[..., 1] * 4 + levels[..., 2]
    counts = np.bincount(index.ravel(), minlength=64).astype(np.float64)
    result: np.ndarray = counts / counts.sum()
    return result


def scan_video(path: object, *, width: int = 64) -> tuple[VideoInfo, list[float], list[float]]:
    """Decode every frame once: the video's info, frame times and cut scores.

    The cut score of frame ``i`` is the histogram distance (half the L1 distance of
    64-bin colour histograms, in ``[0, 1]``) to frame ``i - 1``; it is 0 for the
    first frame. Motion inside a shot barely moves a histogram; a hard cut does.
    """
    container = _open(path)
    try:
        stream = container.streams.video[0]
        times: list[float] = []
        scores: list[float] = []
        previous: np.ndarray | None = None
        for frame in _frames(container):
            hist = _color_hist(frame, width)
            scores.append(0.0 if previous is None else float(np.abs(hist - previous).sum()) / 2)
            times.append(float(frame.time))
            previous = hist
        if not times:
            raise VideoError("no decodable video frames")
        fps = _fps(stream) or (len(times) - 1) / max(times[-1] - times[0], 1e-9)
        info = VideoInfo(
            fps=fps,
            width=int(stream.codec_context.width),
            height=int(stream.codec_context.height),
            duration_s=times[-1] + 1.0 / fps if fps else times[-1],
            frames=len(times),
        )
        return info, times, scores
    finally:
        container.close()


def probe_video(path: object) -> VideoInfo | None:
    """The video's info from container metadata alone, or None when it lacks a duration."""
    container = _open(path)
    try:
        stream = container.streams.video[0]
        if stream.duration is not None and stream.time_base:
            duration = float(stream.duration * stream.time_base)
        elif container.duration is not None:
            duration = container.duration / 1_000_000
        else:
            return None
        fps = _fps(stream)
        if duration <= 0 or not fps:
            return None
        return VideoInfo(
            fps=fps,
            width=int(stream.codec_context.width),
            height=int(stream.codec_context.height),
            duration_s=duration,
            frames=int(stream.frames) or round(duration * fps),
        )
    finally:
        container.close()


def find_cuts(
    times: list[float],
    scores: list[float],
    *,
    threshold: float = 0.3,
    ratio: float = 3.0,
    window: int = 8,
    min_clip_s: float = 0.5,
) -> list[float]:
    """Times of hard cuts: a score above ``threshold`` and ``ratio`` x the recent mean.

    The recent mean is over the ``window`` frames before; a cut closer than
    ``min_clip_s`` to the previous one (or to the start) is ignored.
    """
    cuts: list[float] = []
    last = times[0] if times else 0.0
    for i in range(1, len(scores)):
        recent = scores[max(1, i - window) : i]
        baseline = sum(recent) / len(recent) if recent else 0.0
        if (
            scores[i] >= threshold
            and scores[i] >= ratio * baseline
            and times[i] - last >= min_clip_s
        ):
            cuts.append(times[i])
            last = times[i]
    return cuts


def spans_fixed(duration_s: float, clip_s: float) -> list[tuple[float, float]]:
    """Consecutive ``clip_s``-long spans covering ``[0, duration_s)``; the last may be short."""
    if clip_s <= 0:
        raise UsageError(f"spans_fixed: clip_s must be positive (seconds), got {clip_s!r}")
    count = max(1, int(np.ceil(duration_s / clip_s - 1e-9)))
    return [(i * clip_s, min((i + 1) * clip_s, duration_s)) for i in range(count)]


def sample_frames(
    path: object, start_s: float, end_s: float, *, count: int = 8, max_side: int = 224
) -> tuple[np.ndarray, list[float]]:
    """Up to ``count`` RGB frames evenly spread over ``[start_s, end_s)``, and their times.

    Frames are scaled so that their longer side is at most ``max_side``. Returns an
    array of shape ``(n, height, width, 3)``.
    """
    if count < 1:
        raise UsageError(f"sample_frames: count must be at least 1, got {count!r}")
    container = _open(path)
    try:
        stream = container.streams.video[0]
        fps = _fps(stream) or 25.0
        if start_s > 0 and stream.time_base:
            container.seek(int(start_s / stream.time_base), stream=stream, backward=True)
        step = (end_s - start_s) / count
        targets = [start_s + (k + 0.5) * step for k in range(count)]
        picked: list[np.ndarray] = []
        times: list[float] = []
        for frame in _frames(container):
            t = float(frame.time)
            if t < start_s - 0.5 / fps:
                continue
            if t >= end_s - 0.5 / fps or not targets:
                break
            if t + 0.5 / fps < targets[0]:
                continue
            while targets and targets[0] <= t + 0.5 / fps:
                targets.pop(0)
            scale = min(1.0, max_side / max(frame.width, frame.height))
            width = max(2, round(frame.width * scale))
            height = max(2, round(frame.height * scale))
            picked.append(frame.reformat(width=width, height=height, format="rgb24").to_ndarray())
            times.append(t)
        if not picked:
            raise VideoError(f"no frames decoded between {start_s:.3f}s and {end_s:.3f}s")
        return np.stack(picked), times
    finally:
        container.close()


def motion_score(frames: np.ndarray) -> float:
    """Mean absolute gray-level change between consecutive frames, in ``[0, 1]``."""
    if len(frames) < 2:
        return 0.0
    gray = frames.astype(np.float32).mean(axis=3)
    return float(np.abs(np.diff(gray, axis=0)).mean()) / 255.0


def _sharpness(gray: np.ndarray) -> float:
    if min(gray.shape) < 3:
        return 0.0
    lap = gray[:-2, 1:-1] + gray[2:, 1:-1] + gray[1:-1, :-2] + gray[1:-1, 2:] - 4 * gray[1:-1, 1:-1]
    return float(lap.var())


def frame_features(frame: np.ndarray, *, bins: int = 8) -> dict[str, Any]:
    """Cheap, JSON-friendly statistics of one RGB frame."""
    rgb = frame.astype(np.float32)
    gray = rgb.mean(axis=2)
    rg = rgb[..., 0] - rgb[..., 1]
    yb = 0.5 * (rgb[..., 0] + rgb[..., 1]) - rgb[..., 2]
    colorfulness = float(np.hypot(rg.std(), yb.std()) + 0.3 * np.hypot(rg.mean(), yb.mean()))
    hist = [
        np.histogram(frame[..., c], bins=bins, range=(0, 256))[0] / frame[..., c].size
        for c in range(3)
    ]
    return {
        "brightness": round(float(gray.mean()) / 255, 4),
        "contrast": round(float(gray.std()) / 255, 4),
        "sharpness": round(_sharpness(gray) / 255**2, 6),
        "colorfulness": round(colorfulness / 255, 4),
        "mean_rgb": [round(float(v) / 255, 4) for v in rgb.reshape(-1, 3).mean(axis=0)],
        "color_hist": [round(float(v), 4) for channel in hist for v in channel],
    }
