"""Both pipelines end to end on the in-process reference executor (no Ray)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.workloads.documents import DocumentPipeline
from airflow_provider_rayorch.workloads.samples import write_text_pdf
from airflow_provider_rayorch.workloads.video import VideoPipeline

if TYPE_CHECKING:
    from pathlib import Path


def squash(text: str) -> str:
    return text.lower().replace(" ", "")


def run_local(pipeline: ro.Pipeline, sources: list[Any], **kwargs: Any) -> ro.RunResult:
    return ro.run(pipeline, sources, backend="local", **kwargs)


def test_documents_end_to_end(text_pdf: Path, blank_pdf: Path) -> None:
    other = write_text_pdf(None, [["OMEGA 77"], ["ZULU"]])
    sources = [str(text_pdf), other, b"%PDF-1.7 not really", str(blank_pdf)]
    result = run_local(DocumentPipeline(), sources, input_batch_size=2)
    first, second, corrupt, blank = result.outputs
    assert first["pages"] == 3
    assert squash(first["markdown"]) == "helloworld\nsecondlinehere\n\npagethreeapple"
    assert [d["page"] for d in first["page_details"]] == [1, 3]
    assert first["skipped_pages"] == [2]
    assert squash(second["markdown"]) == "omega77\n\nzulu"
    assert second["source"] == f"<{len(other)} bytes>"
    assert corrupt == ro.OutputIssue(ro.ItemOutcome.FAILED, "doc[2]: corrupt or not a PDF")
    assert blank["pages"] == 2
    assert blank["markdown"] == ""
    assert blank["page_details"] == []
    assert json.loads(json.dumps(first)) == first  # JSON values only, for the run store
    summary = result.lineage()
    assert summary["sources"] == {
        "total": 4,
        "present": 3,
        "dropped": 0,
        "failed": 1,
        "suppressed": 0,
    }
    assert summary["entities"]["doc"] == 4
    assert summary["entities"]["page"] == 7


def test_recognition_batches_mix_documents(text_pdf: Path) -> None:
    docs = [write_text_pdf(None, [[f"WORD {n}"]]) for n in range(3)]
    result = run_local(DocumentPipeline(recognize_batch_size=8), docs, input_batch_size=3)
    assert [squash(o["markdown"]) for o in result.outputs] == ["word0", "word1", "word2"]
    (recognize,) = [c for c in result.calls if c["name"] == "recognize"]
    assert max(int(size) for size in recognize["batch_sizes"]) >= 2, recognize


@pytest.mark.parametrize(
    ("on_bad_page", "expected"),
    [pytest.param("fail", "suppressed", id="fail"), pytest.param("skip", "present", id="skip")],
)
def test_bad_page_policy(bad_page_pdf: bytes, on_bad_page: str, expected: str) -> None:
    good = write_text_pdf(None, [["FINE"]])
    result = run_local(DocumentPipeline(on_bad_page=on_bad_page), [bad_page_pdf, good])
    bad, fine = result.outputs
    assert squash(fine["markdown"]) == "fine"
    if expected == "suppressed":
        assert bad.outcome is ro.ItemOutcome.SUPPRESSED
        assert bad.cause.startswith("doc[0]/page[2]: cannot render page 3")
    else:
        assert bad["pages"] == 3
        assert bad["skipped_pages"] == [3]
        assert squash(bad["markdown"]) == "one\n\ntwo"


def test_document_options_are_checked() -> None:
    with pytest.raises(ro.UsageError, match=r"unknown option.*dpix"):
        DocumentPipeline(dpix=100)
    with pytest.raises(ro.UsageError, match="unknown stage"):
        DocumentPipeline(ray_options={"ocr": {"num_cpus": 1}})
    with pytest.raises(ValueError, match="on_bad_page"):
        DocumentPipeline(on_bad_page="ignore")
    plan = DocumentPipeline(ray_options={"recognize": {"num_cpus": 2}}).compile()
    assert (
        plan.fingerprint
        == DocumentPipeline(ray_options={"recognize": {"num_cpus": 2}}).compile().fingerprint
    )
    assert plan.fingerprint != DocumentPipeline().compile().fingerprint


def test_video_end_to_end(cut_video: Path, tmp_path: Path) -> None:
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video at all" * 10)
    result = run_local(VideoPipeline(), [str(cut_video), str(junk), str(cut_video)])
    video, broken, again = result.outputs
    clips = video["clips"]
    assert [(c["start_s"], c["end_s"]) for c in clips] == [(0.0, 1.0), (2.0, 3.0)]
    assert [c["index"] for c in clips] == [0, 2]
    assert video["static_clips"] == [1]
    assert video["duration_s"] == pytest.approx(3.0)
    assert all(c["motion"] > 0.01 for c in clips)
    assert all(c["start_s"] <= c["keyframe_s"] < c["end_s"] for c in clips)
    assert again == video
    assert json.loads(json.dumps(video)) == video  # JSON values only, for the run store
    assert broken.outcome is ro.ItemOutcome.FAILED
    assert broken.cause.startswith("video[1]: cannot open video")


def test_video_fixed_split_and_all_static(cut_video: Path, tmp_path: Path) -> None:
    from airflow_provider_rayorch.workloads.samples import Segment, write_scene_video

    still = tmp_path / "still.mp4"
    write_scene_video(still, [Segment(1.0, "static")])
    pipeline = VideoPipeline(split="fixed", clip_s=0.5, frames_per_clip=3)
    moving, static = run_local(pipeline, [str(cut_video), str(still)]).outputs
    starts = [c["start_s"] for c in moving["clips"]]
    assert starts == [0.0, 0.5, 2.0, 2.5]
    assert moving["static_clips"] == [2, 3]
    assert static["clips"] == []
    assert static["static_clips"] == [0, 1]


def test_video_options_are_checked() -> None:
    with pytest.raises(ro.UsageError, match="unknown option"):
        VideoPipeline(fps=3)
    with pytest.raises(ValueError, match="split"):
        VideoPipeline(split="shots")
    with pytest.raises(ValueError, match="frames_per_clip"):
        VideoPipeline(frames_per_clip=0)


@pytest.mark.parametrize(
    "pipeline",
    [
        pytest.param(lambda: DocumentPipeline(), id="documents"),
        pytest.param(lambda: VideoPipeline(), id="video"),
        pytest.param(lambda: VideoPipeline(caption_model="/models/vlm"), id="video+caption"),
    ],
)
def test_default_reservations_fit_two_cpus(pipeline: Any) -> None:
    """Ray starts no actor that does not fit: the defaults must fit a 2-CPU node."""
    modules = [m for m in vars(pipeline()).values() if isinstance(m, ro.RayModule)]
    assert modules
    total = sum(m.options.get("num_cpus", 1) * m.options.get("replicas", 1) for m in modules)
    assert total <= 2.0
    assert all(m.options.get("num_gpus", 0) == 0 for m in modules)


class TallCropsExplode:
    """Recognition that raises on any batch holding a crop taller than 60 pixels."""

    def __init__(self) -> None:
        from airflow_provider_rayorch.workloads.document_stages import RecognizeText

        self.inner = RecognizeText()

    def run(self, regions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if any(r["crop"].shape[0] > 60 for r in regions):
            raise RuntimeError("poisoned crop")
        return self.inner.run(regions)


def test_poisoned_region_fails_only_its_document() -> None:
    """isolate_tail splits mixed batches so that healthy documents still complete."""
    pipeline = DocumentPipeline(recognize_batch_size=8)
    pipeline.recognize = ro.RayModule(TallCropsExplode).ray_options(
        batch_size=8, recovery=ro.RecoveryPolicy.isolate_tail(max_retries=1)
    )
    small = [write_text_pdf(None, [[word]], font_size=20) for word in ("ALPHA", "BRAVO")]
    huge = write_text_pdf(None, [["HUGE"]], font_size=48)
    first, poisoned, second = run_local(pipeline, [small[0], huge, small[1]]).outputs
    assert squash(first["markdown"]) == "alpha"
    assert squash(second["markdown"]) == "bravo"
    assert poisoned.outcome is ro.ItemOutcome.SUPPRESSED
    assert poisoned.cause.startswith("doc[1]/page[0]/region[0]:")
    assert "poisoned crop" in poisoned.cause
