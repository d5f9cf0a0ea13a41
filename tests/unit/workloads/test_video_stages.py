"""The video UDFs, called directly on generated videos (no engine involved)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from airflow_provider_rayorch.rayorch.outcomes import RecordFailure
from airflow_provider_rayorch.workloads._video import find_cuts, motion_score, spans_fixed
from airflow_provider_rayorch.workloads.samples import Segment, write_scene_video
from airflow_provider_rayorch.workloads.video_stages import (
    AssembleVideo,
    DecodeClip,
    ExtractKeyframes,
    ScoreMotion,
    SplitVideo,
)

if TYPE_CHECKING:
    from pathlib import Path


def test_scene_split_finds_the_cuts(cut_video: Path) -> None:
    spans, infos = SplitVideo().run([str(cut_video)])
    bounds = [t for s in spans[0] for t in (s["start_s"], s["end_s"])]
    assert bounds == pytest.approx([0.0, 1.0, 1.0, 2.0, 2.0, 3.0], abs=1 / 12)
    assert [s["index"] for s in spans[0]] == [0, 1, 2]
    info = infos[0]
    assert (info["width"], info["height"], info["frames"], info["clips"]) == (64, 48, 36, 3)
    assert info["duration_s"] == pytest.approx(3.0)
    assert info["fps"] == pytest.approx(12.0)


def test_fixed_split_and_long_shots(cut_video: Path) -> None:
    spans, _ = SplitVideo(mode="fixed", clip_s=1.25).run([cut_video])
    assert [(s["start_s"], s["end_s"]) for s in spans[0]] == [(0, 1.25), (1.25, 2.5), (2.5, 3.0)]
    spans, _ = SplitVideo(max_clip_s=0.5).run([cut_video])
    assert len(spans[0]) == 6
    assert spans[0][1]["start_s"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("make", "cause"),
    [
        pytest.param(lambda d: d / "missing.mp4", "no such file", id="missing"),
        pytest.param(lambda d: _write(d / "junk.mp4", b"\x00junk" * 100), "cannot open", id="junk"),
        pytest.param(lambda d: _write(d / "empty.mp4", b""), "cannot open", id="empty"),
        pytest.param(lambda d: 3.5, "unsupported video source", id="wrong-type"),
    ],
)
def test_unreadable_videos_fail(tmp_path: Path, make: Any, cause: str) -> None:
    spans, infos = SplitVideo().run([make(tmp_path)])
    assert isinstance(spans[0], RecordFailure)
    assert cause in spans[0].cause
    assert isinstance(infos[0], RecordFailure)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_decode_score_and_keyframes(cut_video: Path) -> None:
    spans, _ = SplitVideo().run([cut_video])
    clips = DecodeClip(frames_per_clip=4, max_side=32).run(spans[0], [cut_video] * 3)
    assert [c["frames"].shape for c in clips] == [(4, 24, 32, 3)] * 3
    for clip, span in zip(clips, spans[0], strict=True):
        assert all(span["start_s"] <= t < span["end_s"] for t in clip["times"])
    motion, keep = ScoreMotion().run(clips)
    assert keep == [True, False, True]
    assert motion[1] == pytest.approx(0.0, abs=1e-3)
    summaries = ExtractKeyframes().run(clips, spans[0], motion)
    first = summaries[0]
    assert first["start_s"] == 0.0
    assert first["motion"] == motion[0]
    assert first["start_s"] <= first["keyframe_s"] < first["end_s"]
    assert len(first["color_hist"]) == 24
    red, green, blue = first["mean_rgb"]
    assert red > max(green, blue)  # the first shot is red
    assert summaries[2]["mean_rgb"][2] > summaries[2]["mean_rgb"][0]  # the last is blue


def test_decode_fails_a_span_without_frames(cut_video: Path) -> None:
    (clip,) = DecodeClip().run([{"index": 0, "start_s": 10.0, "end_s": 11.0}], [cut_video])
    assert isinstance(clip, RecordFailure)
    assert "no frames" in clip.cause


def test_assemble_video_lists_static_clips() -> None:
    info = {"source": "v.mp4", "duration_s": 3.0, "clips": 3}
    clips = [{"index": 0, "start_s": 0.0}, {"index": 2, "start_s": 2.0}]
    (video,) = AssembleVideo().run([clips], [info])
    assert video["clips"] == clips
    assert video["static_clips"] == [1]
    assert video["source"] == "v.mp4"


def test_cut_detection_ignores_steady_motion_and_close_cuts() -> None:
    times = [i / 10 for i in range(20)]
    scores = [0.0] + [0.05] * 19
    scores[5] = 0.9
    scores[7] = 0.9  # only 0.2 s after the first cut
    scores[15] = 0.8
    assert find_cuts(times, scores, min_clip_s=0.5) == [0.5, 1.5]


def test_motion_and_fixed_spans() -> None:
    still = np.zeros((3, 4, 4, 3), np.uint8)
    assert motion_score(still) == 0.0
    assert motion_score(still[:1]) == 0.0
    flashing = still.copy()
    flashing[1] = 255
    assert motion_score(flashing) == pytest.approx(1.0)
    assert spans_fixed(2.0, 1.0) == [(0.0, 1.0), (1.0, 2.0)]
    with pytest.raises(ValueError, match="positive"):
        spans_fixed(2.0, 0)


def test_split_rejects_unknown_mode() -> None:
    with pytest.raises(ValueError, match="mode"):
        SplitVideo(mode="shots")  # type: ignore[arg-type]


def test_video_without_cuts_is_one_clip(tmp_path: Path) -> None:
    path = tmp_path / "one.mp4"
    write_scene_video(path, [Segment(1.5, "moving")], fps=10)
    spans, infos = SplitVideo().run([path])
    assert spans[0] == [{"index": 0, "start_s": 0.0, "end_s": 1.5}]
    assert infos[0]["frames"] == 15


def test_audio_only_file_fails(tmp_path: Path) -> None:
    import av

    path = tmp_path / "tone.wav"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("pcm_s16le", rate=8000)
        frame = av.AudioFrame.from_ndarray(
            np.zeros((1, 800), np.int16), format="s16", layout="mono"
        )
        frame.sample_rate = 8000
        container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    spans, _ = SplitVideo().run([path])
    assert spans[0] == RecordFailure("no video stream")


def test_fixed_split_uses_metadata_and_counts_frames(cut_video: Path) -> None:
    _, infos = SplitVideo(mode="fixed").run([cut_video])
    assert infos[0]["frames"] == 36
    assert infos[0]["duration_s"] == pytest.approx(3.0, abs=1 / 12)
