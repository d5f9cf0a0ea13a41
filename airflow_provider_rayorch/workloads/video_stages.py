"""The video pipeline's UDFs: plain classes, usable on their own or in any Pipeline.

Domains: ``video`` (one file) -> ``clip`` (one shot or fixed-length piece).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Literal

from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.rayorch.outcomes import RecordFailure
from airflow_provider_rayorch.workloads._video import (
    VideoError,
    find_cuts,
    frame_features,
    motion_score,
    probe_video,
    sample_frames,
    scan_video,
    spans_fixed,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

__all__ = ["AssembleVideo", "DecodeClip", "ExtractKeyframes", "ScoreMotion", "SplitVideo"]

SplitMode = Literal["scene", "fixed"]


class SplitVideo:
    """``video``: decode once and cut the video into clip spans.

    ``mode="scene"`` cuts at hard shot changes (colour-histogram jumps, see
    ``find_cuts``), then splits shots longer than ``max_clip_s``; ``mode="fixed"``
    cuts every ``clip_s`` seconds. Returns ``(spans, info)``: spans are
    ``{"index", "start_s", "end_s"}`` dicts; info describes the video. An unreadable
    video is a ``RecordFailure`` naming why.
    """

    def __init__(
        self,
        mode: SplitMode = "scene",
        clip_s: float = 2.0,
        cut_threshold: float = 0.3,
        min_clip_s: float = 0.5,
        max_clip_s: float | None = None,
    ) -> None:
        if mode not in ("scene", "fixed"):
            raise UsageError(f"SplitVideo: mode must be 'scene' or 'fixed', not {mode!r}")
        self.mode = mode
        self.clip_s = clip_s
        self.cut_threshold = cut_threshold
        self.min_clip_s = min_clip_s
        self.max_clip_s = max_clip_s

    def run(self, paths: Sequence[object]) -> tuple[list[Any], list[Any]]:
        spans: list[Any] = []
        infos: list[Any] = []
        for path in paths:
            try:
                span_list, info = self._split(path)
            except VideoError as exc:
                spans.append(RecordFailure(str(exc)))
                infos.append(RecordFailure(str(exc)))
                continue
            spans.append(span_list)
            infos.append(info)
        return spans, infos

    def _split(self, path: object) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        if self.mode == "fixed":  # needs only the duration: metadata, else a scan
            info = probe_video(path) or scan_video(path)[0]
            pieces = spans_fixed(info.duration_s, self.clip_s)
        else:
            info, times, scores = scan_video(path)
            cuts = find_cuts(
                times, scores, threshold=self.cut_threshold, min_clip_s=self.min_clip_s
            )
            bounds = [times[0], *cuts, info.duration_s]
            pieces = []
            for start, end in itertools.pairwise(bounds):
                if self.max_clip_s:
                    pieces.extend(
                        (start + a, start + b) for a, b in spans_fixed(end - start, self.max_clip_s)
                    )
                else:
                    pieces.append((start, end))
        spans = [
            {"index": i, "start_s": round(start, 4), "end_s": round(end, 4)}
            for i, (start, end) in enumerate(pieces)
        ]
        summary = {
            "source": str(path),
            "duration_s": round(info.duration_s, 4),
            "fps": round(info.fps, 4),
            "width": info.width,
            "height": info.height,
            "frames": info.frames,
            "clips": len(spans),
        }
        return spans, summary


class DecodeClip:
    """``clip``: decode ``frames_per_clip`` frames spread over each span.

    Inputs are the span and the video path (broadcast from ``video``). Returns
    ``{"frames": uint8 array (n, h, w, 3), "times": [...]}`` with the longer side
    of each frame at most ``max_side`` pixels.
    """

    def __init__(self, frames_per_clip: int = 8, max_side: int = 224) -> None:
        self.frames_per_clip = frames_per_clip
        self.max_side = max_side

    def run(self, spans: Sequence[dict[str, Any]], paths: Sequence[object]) -> list[Any]:
        out: list[Any] = []
        for span, path in zip(spans, paths, strict=True):
            try:
                frames, times = sample_frames(
                    path,
                    span["start_s"],
                    span["end_s"],
                    count=self.frames_per_clip,
                    max_side=self.max_side,
                )
            except VideoError as exc:
                out.append(RecordFailure(str(exc)))
                continue
            out.append({"frames": frames, "times": times})
        return out


class ScoreMotion:
    """``clip``: motion score of each clip and whether it is moving enough to keep.

    Returns ``(motion, keep)``; ``keep`` is ``motion >= static_threshold``.
    """

    def __init__(self, static_threshold: float = 0.005) -> None:
        self.static_threshold = static_threshold

    def run(self, clips: Sequence[dict[str, Any]]) -> tuple[list[float], list[bool]]:
        scores = [round(motion_score(clip["frames"]), 6) for clip in clips]
        return scores, [s >= self.static_threshold for s in scores]


class ExtractKeyframes:
    """``clip``: pick the sharpest sampled frame as keyframe and describe the clip.

    Returns a JSON-friendly dict: the span, ``motion``, ``keyframe_s`` and the
    keyframe's features (brightness, contrast, sharpness, colourfulness, mean colour
    and a colour histogram).
    """

    def run(
        self,
        clips: Sequence[dict[str, Any]],
        spans: Sequence[dict[str, Any]],
        motions: Sequence[float],
    ) -> list[dict[str, Any]]:
        out = []
        for clip, span, motion in zip(clips, spans, motions, strict=True):
            frames: np.ndarray = clip["frames"]
            features = [frame_features(frame) for frame in frames]
            best = max(range(len(features)), key=lambda i: features[i]["sharpness"])
            out.append(
                {
                    **span,
                    "duration_s": round(span["end_s"] - span["start_s"], 4),
                    "motion": motion,
                    "keyframe_s": round(clip["times"][best], 4),
                    **features[best],
                }
            )
        return out


class AssembleVideo:
    """``video``: the per-video dict with its kept clips in time order.

    ``static_clips`` lists the indexes of clips that were dropped as static.
    """

    def run(
        self, clip_lists: Sequence[Sequence[dict[str, Any]]], infos: Sequence[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        out = []
        for clips, info in zip(clip_lists, infos, strict=True):
            kept = {c["index"] for c in clips}
            out.append(
                {
                    **info,
                    "clips": list(clips),
                    "static_clips": [i for i in range(info["clips"]) if i not in kept],
                }
            )
        return out
