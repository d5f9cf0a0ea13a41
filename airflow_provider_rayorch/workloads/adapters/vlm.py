"""VLM caption adapter: Qwen2.5-VL-style models through transformers, from a local dir.

``CaptionClips`` loads the tokenizer, image processor and model once per actor
(``local_files_only=True``: nothing is downloaded) and captions a batch of clips
in one ``generate`` call. Each clip is shown as up to ``max_frames`` of its
sampled frames, as images in Qwen's chat format, so no video processor (and no
torchvision) is needed. Fetch a model where a hub is reachable, for example
``hf download Qwen/Qwen2.5-VL-7B-Instruct --local-dir DIR``, and copy ``DIR``
to the workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from airflow_provider_rayorch.workloads._deps import require
from airflow_provider_rayorch.workloads.adapters._common import require_model_dir

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["CaptionClips", "build_prompt", "pick_frames"]

_HOW = (
    "download a Qwen2.5-VL-style model where a hub is reachable (for example "
    "`hf download Qwen/Qwen2.5-VL-7B-Instruct --local-dir DIR`) and copy DIR to every worker."
)


def pick_frames(frames: np.ndarray, count: int) -> list[np.ndarray]:
    """Up to ``count`` frames spread evenly over ``frames`` (first and last included)."""
    if len(frames) <= count:
        return list(frames)
    picks = np.linspace(0, len(frames) - 1, count).round().astype(int)
    return [frames[i] for i in picks]


def build_prompt(image_tokens: Sequence[int], prompt: str) -> str:
    """A Qwen chat prompt with one vision block per image of ``image_tokens`` pads."""
    vision = "".join(
        "<|vision_start|>" + "<|image_pad|>" * n + "<|vision_end|>" for n in image_tokens
    )
    return (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        f"<|im_start|>user\n{vision}{prompt}<|im_end|>\n<|im_start|>assistant\n"
    )


class CaptionClips:
    """``clip``: one caption per clip (``{"frames": (n, h, w, 3) uint8, ...}``)."""

    def __init__(
        self,
        model_path: str,
        prompt: str = "Describe this video clip in one sentence.",
        max_new_tokens: int = 48,
        max_frames: int = 4,
        device: str = "cpu",
        dtype: str = "auto",
    ) -> None:
        root = require_model_dir(model_path, what="VLM caption", how=_HOW)
        torch: Any = require("torch", extra="vlm")
        transformers: Any = require("transformers", extra="vlm")
        self.torch = torch
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(root, local_files_only=True)
        self.tokenizer.padding_side = "left"
        self.images = transformers.AutoImageProcessor.from_pretrained(root, local_files_only=True)
        self.model = transformers.AutoModelForImageTextToText.from_pretrained(
            root, local_files_only=True, dtype=dtype
        ).to(device)
        self.model.eval()
        self.device = device
        self.prompt = prompt
        self.max_new_tokens = max_new_tokens
        self.max_frames = max_frames

    def run(self, clips: Sequence[dict[str, Any]], *, prompt: str | None = None) -> list[str]:
        frame_lists = [pick_frames(clip["frames"], self.max_frames) for clip in clips]
        flat = [frame for frames in frame_lists for frame in frames]
        encoded = self.images(images=flat, return_tensors="pt")
        merge = int(getattr(self.images, "merge_size", 2))
        tokens = [int(grid.prod()) // merge**2 for grid in encoded["image_grid_thw"]]
        prompts = []
        start = 0
        for frames in frame_lists:
            prompts.append(build_prompt(tokens[start : start + len(frames)], prompt or self.prompt))
            start += len(frames)
        text = self.tokenizer(prompts, return_tensors="pt", padding=True)
        inputs = {
            "input_ids": text["input_ids"],
            "attention_mask": text["attention_mask"],
            "pixel_values": encoded["pixel_values"],
            "image_grid_thw": encoded["image_grid_thw"],
        }
        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        with self.torch.inference_mode():
            output = self.model.generate(
                **inputs, max_new_tokens=self.max_new_tokens, do_sample=False
            )
        new = output[:, inputs["input_ids"].shape[1] :]
        return [s.strip() for s in self.tokenizer.batch_decode(new, skip_special_tokens=True)]
