"""``rayorch_video`` end to end: generated clips split at their cuts, one record per clip."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from airflow_provider_rayorch.workloads.samples import SAMPLE_VIDEOS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def test_video_dag_records_clips_in_order(main_job) -> None:
    run = main_job("rayorch_video")
    assert run.returncode == 0, run.explain()
    assert run.result["state"] == "success", run.explain()
    out = run.returned("clip_records")
    assert out["sources"]["present"] == len(SAMPLE_VIDEOS)
    assert out["failures"] == []
    by_video: dict[str, list[dict]] = {}
    for clip in out["clips"]:
        by_video.setdefault(Path(clip["video"]).name, []).append(clip)
    assert sorted(by_video) == sorted(SAMPLE_VIDEOS)
    for name, clips in by_video.items():
        for clip in clips:
            assert 0 <= clip["start_s"] <= clip["keyframe_s"] <= clip["end_s"]
        for a, b in pairwise(clips):
            assert a["end_s"] <= b["start_s"], (name, clips)
    # scene split: cuts at the shot boundaries; the still middle shot is dropped
    spans = {
        name: [(c["clip"], c["start_s"], c["end_s"]) for c in clips]
        for name, clips in by_video.items()
    }
    approx = pytest.approx
    assert spans["three-shots.mp4"] == [
        (0, 0.0, approx(1.0, abs=0.1)),
        (2, approx(2.0, abs=0.1), approx(3.0, abs=0.1)),
    ]
    assert spans["two-shots.mp4"] == [
        (0, 0.0, approx(1.5, abs=0.1)),
        (1, approx(1.5, abs=0.1), approx(2.5, abs=0.1)),
    ]
    assert Path(out["report"]).is_file()
    assert Path(out["outputs"]).is_relative_to(run.output)
