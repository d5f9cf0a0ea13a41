"""Pipelines written in the paper package's spelling run here with one import changed.

Each pipeline below is one of the paper package's reference shapes, written the
way its documentation spells them (``RayModule(udf, num_outputs=k)``,
``F.reduce_aligned(..., members=...)``, ``ro.function(fn, num_outputs=k)``);
only ``import rayorch as ro`` became the line below. They run on the local
backend (no Ray) on small inputs whose outputs are known.
"""

from __future__ import annotations

from typing import Any

import airflow_provider_rayorch.rayorch as ro


def run_local(pipeline: ro.Pipeline, *columns: Any, **options: Any) -> Any:
    return ro.run(pipeline, *columns, backend="local", **options).outputs


# =============================================================================
# YOLO + SAM: a detector with two outputs feeding a segmenter per region
# =============================================================================
class LoadImages:
    """``"name:n"`` -> an image with n objects, plus its metadata."""

    def run(self, paths: list[str]) -> tuple[list[Any], list[dict[str, Any]]]:
        images = [{"name": p.split(":")[0], "objects": int(p.split(":")[1])} for p in paths]
        return images, [{"path": p} for p in paths]


class DetectObjects:
    def __init__(self, *, confidence: float) -> None:
        self.confidence = confidence

    def run(
        self, images: list[dict[str, Any]], metadata: list[dict[str, Any]]
    ) -> tuple[list[list[tuple[str, int]]], list[dict[str, Any]]]:
        regions = [[(img["name"], k) for k in range(img["objects"])] for img in images]
        meta = [
            {**m, "detections": len(r), "confidence": self.confidence}
            for m, r in zip(metadata, regions, strict=True)
        ]
        return regions, meta


class SegmentRegion:
    def __init__(self, model_type: str) -> None:
        self.model_type = model_type

    def run(self, regions: list[tuple[str, int]]) -> list[str]:
        return [f"{self.model_type}:{name}#{k}" for name, k in regions]


class RenderMasks:
    def run(
        self, images: list[dict[str, Any]], masks: list[list[str]], metadata: list[dict[str, Any]]
    ) -> tuple[list[str], list[dict[str, Any]]]:
        overlays = [f"{img['name']}+{len(m)}" for img, m in zip(images, masks, strict=True)]
        return overlays, [{**meta, "masks": m} for meta, m in zip(metadata, masks, strict=True)]


class SaveMetadata:
    def run(self, overlays: list[str], metadata: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**m, "overlay": o} for o, m in zip(overlays, metadata, strict=True)]


class YoloSamPipeline(ro.Pipeline):
    def __init__(self, batch_size: int = 2) -> None:
        self.load = ro.RayModule(LoadImages, num_outputs=2).ray_options(
            replicas=1, batch_size=batch_size, num_cpus=1
        )
        self.yolo = (
            ro.RayModule(DetectObjects, num_outputs=2)
            .pre_init(confidence=0.25)
            .ray_options(replicas=1, batch_size=batch_size, num_cpus=1, num_gpus=0.0)
        )
        self.sam = (
            ro.RayModule(SegmentRegion)
            .pre_init(model_type="vit_b")
            .ray_options(replicas=2, batch_size=3, num_cpus=1, num_gpus=0.0)
        )
        self.render = ro.RayModule(RenderMasks, num_outputs=2).ray_options(
            replicas=1, batch_size=batch_size, num_cpus=1
        )
        self.save = ro.RayModule(SaveMetadata).ray_options(replicas=1, batch_size=batch_size)

    def forward(self, paths: ro.Port) -> ro.Port:
        images, metadata = self.load(paths)
        regions, metadata = self.yolo(images, metadata)
        masks = self.sam(ro.F.expand(regions))
        overlays, metadata = self.render(images, ro.F.reduce(masks), metadata)
        return self.save(overlays, metadata)


def test_yolo_sam_detector_with_two_outputs_feeds_a_segmenter_per_region() -> None:
    out = run_local(YoloSamPipeline(), ["a:2", "b:0", "c:3"])
    assert out == [
        {
            "path": "a:2",
            "detections": 2,
            "confidence": 0.25,
            "masks": ["vit_b:a#0", "vit_b:a#1"],
            "overlay": "a+2",
        },
        {"path": "b:0", "detections": 0, "confidence": 0.25, "masks": [], "overlay": "b+0"},
        {
            "path": "c:3",
            "detections": 3,
            "confidence": 0.25,
            "masks": ["vit_b:c#0", "vit_b:c#1", "vit_b:c#2"],
            "overlay": "c+3",
        },
    ]
