"""The VLM caption adapter on a tiny, randomly initialised Qwen2.5-VL built here.

The model has one text and one vision layer and random weights, so captions are
gibberish: the tests check the loading code, batching, prompt building and the
wiring into ``VideoPipeline``, not caption quality. Skipped without torch and
transformers (the ``vlm`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.workloads._deps import MissingModelError
from airflow_provider_rayorch.workloads.adapters.vlm import build_prompt, pick_frames
from airflow_provider_rayorch.workloads.samples import write_tiny_qwen_vl
from airflow_provider_rayorch.workloads.video import VideoPipeline

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="module")
def tiny_qwen(tmp_path_factory: pytest.TempPathFactory) -> str:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    return write_tiny_qwen_vl(tmp_path_factory.mktemp("tiny-qwen"))


def test_caption_batch_of_clips(tiny_qwen: str) -> None:
    from airflow_provider_rayorch.workloads.adapters.vlm import CaptionClips

    captioner = CaptionClips(str(tiny_qwen), max_new_tokens=6, max_frames=2)
    rng = np.random.default_rng(0)
    clips = [
        {"frames": rng.integers(0, 255, (3, 48, 64, 3), dtype=np.uint8)},
        {"frames": rng.integers(0, 255, (1, 56, 56, 3), dtype=np.uint8)},
    ]
    captions = captioner.run(clips)
    assert len(captions) == 2
    assert all(isinstance(c, str) for c in captions)
    assert captioner.run(clips) == captions  # greedy decoding is deterministic
    assert captioner.run(clips[:1]) == captions[:1]  # the batch does not change a row


def test_video_pipeline_with_captions(tiny_qwen: str, cut_video: Path) -> None:
    pipeline = VideoPipeline(caption_model=str(tiny_qwen), caption_max_new_tokens=4)
    (video,) = ro.run(pipeline, [str(cut_video)], backend="local").outputs
    assert [c["index"] for c in video["clips"]] == [0, 2]
    assert all(isinstance(c["caption"], str) for c in video["clips"])


def test_missing_model_dir_names_the_download(tmp_path: Path) -> None:
    from airflow_provider_rayorch.workloads.adapters.vlm import CaptionClips

    with pytest.raises(MissingModelError, match=r"hf download Qwen/Qwen2\.5-VL"):
        CaptionClips(str(tmp_path / "nowhere"))


def test_prompt_and_frame_picking() -> None:
    prompt = build_prompt([2, 1], "Say hi.")
    assert prompt.count("<|image_pad|>") == 3
    assert prompt.count("<|vision_start|>") == 2
    assert prompt.endswith("Say hi.<|im_end|>\n<|im_start|>assistant\n")
    frames = np.arange(10).reshape(10, 1, 1, 1)
    assert [int(f.item()) for f in pick_frames(frames, 3)] == [0, 4, 9]
    assert len(pick_frames(frames[:2], 3)) == 2
