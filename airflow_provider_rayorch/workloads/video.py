"""``VideoPipeline``: videos to ordered, scored clips, on CPUs by default.

::

    video ──SplitVideo──► spans, info ; spans ─expand─► clip
    clip ──DecodeClip(+ video broadcast)──► frames ──ScoreMotion──► motion, moving
    frames ─filter(moving)─► ExtractKeyframes(+ span, motion) ──► clip summary
    [frames ──Caption──► caption ──attach──► clip summary]     (caption_model=...)
    clip summary ─reduce─► video ──AssembleVideo(+ info)──► result dict

Static clips are DROPPED (listed in ``static_clips``); an unreadable video FAILS.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.errors import UsageError
from airflow_provider_rayorch.workloads._options import check_stages, parse_options, stage_options
from airflow_provider_rayorch.workloads.video_stages import (
    AssembleVideo,
    DecodeClip,
    ExtractKeyframes,
    ScoreMotion,
    SplitVideo,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["STAGES", "VideoOptions", "VideoPipeline", "attach_captions"]

STAGES = ("split", "decode", "motion", "keyframes", "caption", "attach_caption", "assemble")


@dataclass(frozen=True)
class VideoOptions:
    """Options of :class:`VideoPipeline`; the defaults fit a Ray with 2 CPUs, no GPU.

    The default stages reserve 0.95 CPU in all; the caption stage adds 1 CPU.
    Ray never starts an actor whose reservation does not fit, so keep the sum of
    every stage's ``num_cpus`` x ``replicas`` within the cluster's CPUs.
    """

    split: Literal["scene", "fixed"] = "scene"
    """Cut at shot changes, or every ``clip_s`` seconds."""
    clip_s: float = 2.0
    cut_threshold: float = 0.3
    """Colour-histogram distance (0..1) between frames that counts as a cut."""
    min_clip_s: float = 0.5
    max_clip_s: float | None = None
    """Split shots longer than this (scene mode)."""
    frames_per_clip: int = 8
    max_side: int = 224
    """Decoded frames are scaled so their longer side is at most this."""
    static_threshold: float = 0.005
    """Clips whose motion score is below this are static and DROPPED."""
    decode_replicas: int = 2
    decode_batch_size: int = 4
    caption_model: str | None = None
    """A local Qwen2.5-VL-style model directory: adds a caption per kept clip."""
    caption_prompt: str = "Describe this video clip in one sentence."
    caption_max_new_tokens: int = 48
    caption_device: str = "cpu"
    """Torch device of the caption model, e.g. ``"cuda"`` (with ``num_gpus`` in ray_options)."""
    ray_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per-stage overrides, e.g. ``{"caption": {"num_gpus": 1}}``; stages are
    ``split, decode, motion, keyframes, caption, attach_caption, assemble``."""

    def __post_init__(self) -> None:
        if self.split not in ("scene", "fixed"):
            raise UsageError(f"split must be 'scene' or 'fixed', not {self.split!r}")
        if self.clip_s <= 0 or self.frames_per_clip < 1 or self.max_side < 2:
            raise UsageError(
                "clip_s must be > 0, frames_per_clip >= 1 and max_side >= 2; got "
                f"clip_s={self.clip_s!r}, frames_per_clip={self.frames_per_clip!r}, "
                f"max_side={self.max_side!r}"
            )


def attach_captions(
    summaries: Sequence[dict[str, Any]], captions: Sequence[str]
) -> list[dict[str, Any]]:
    """Put each clip's caption into its summary dict."""
    return [{**s, "caption": c} for s, c in zip(summaries, captions, strict=True)]


class VideoPipeline(ro.Pipeline):
    """Video path -> ``{"clips": [{"start_s", "end_s", "motion", ...}], "static_clips", ...}``."""

    def __init__(self, **options: Any) -> None:
        opts = parse_options(VideoOptions, options, where="VideoPipeline")
        check_stages(opts.ray_options, STAGES, where="VideoPipeline")
        self.options = opts

        def ray(stage: str, **defaults: Any) -> dict[str, Any]:
            return stage_options(defaults, opts.ray_options, stage)

        self.split: Any = (
            ro.RayModule(SplitVideo)
            .pre_init(
                mode=opts.split,
                clip_s=opts.clip_s,
                cut_threshold=opts.cut_threshold,
                min_clip_s=opts.min_clip_s,
                max_clip_s=opts.max_clip_s,
            )
            .returns(2)
            .ray_options(**ray("split", batch_size=1, num_cpus=0.25))
        )
        self.decode: Any = (
            ro.RayModule(DecodeClip)
            .pre_init(frames_per_clip=opts.frames_per_clip, max_side=opts.max_side)
            .ray_options(
                **ray(
                    "decode",
                    replicas=opts.decode_replicas,
                    batch_size=opts.decode_batch_size,
                    num_cpus=0.25,
                )
            )
        )
        self.motion: Any = (
            ro.RayModule(ScoreMotion)
            .pre_init(static_threshold=opts.static_threshold)
            .returns(2)
            .ray_options(**ray("motion", batch_size=16, num_cpus=0.05))
        )
        self.keyframes: Any = ro.RayModule(ExtractKeyframes).ray_options(
            **ray("keyframes", batch_size=16, num_cpus=0.1)
        )
        self.caption: Any = None
        self.attach_caption: Any = None
        if opts.caption_model is not None:
            from airflow_provider_rayorch.workloads.adapters.vlm import CaptionClips

            self.caption = (
                ro.RayModule(CaptionClips)
                .pre_init(
                    model_path=opts.caption_model,
                    prompt=opts.caption_prompt,
                    max_new_tokens=opts.caption_max_new_tokens,
                    device=opts.caption_device,
                )
                .ray_options(**ray("caption", batch_size=4, num_cpus=1))
            )
            self.attach_caption = ro.function(attach_captions).ray_options(
                **ray("attach_caption", batch_size=16, num_cpus=0.05)
            )
        self.assemble: Any = ro.RayModule(AssembleVideo).ray_options(
            **ray("assemble", batch_size=8, num_cpus=0.05)
        )

    def forward(self, video: ro.Port) -> Any:
        spans, info = self.split(video)
        clip = ro.F.expand(spans, domain="clip")
        frames = self.decode(clip, ro.F.broadcast(video, like=clip))
        motion, moving = self.motion(frames)
        frames = ro.F.filter(frames, moving)
        summary = self.keyframes(frames, clip, motion)
        if self.caption is not None and self.attach_caption is not None:
            summary = self.attach_caption(summary, self.caption(frames))
        return self.assemble(ro.F.reduce(summary), info)
