"""Both pipelines on a real local Ray (2 CPUs), with the default options."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.workloads.documents import DocumentPipeline
from airflow_provider_rayorch.workloads.samples import write_text_pdf
from airflow_provider_rayorch.workloads.video import VideoPipeline

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_session", "no_actors_left")]


def squash(text: str) -> str:
    return text.lower().replace(" ", "")


def test_documents_on_ray(text_pdf: Path) -> None:
    blank = write_text_pdf(None, [[], []])
    broken = write_text_pdf(None, [["ONE"], ["TWO"]]).replace(b"/Count 2", b"/Count 3")
    sources = [str(text_pdf), b"%PDF-1.4 junk", blank, broken, write_text_pdf(None, [["ZULU 9"]])]
    result = ro.run(DocumentPipeline(), sources, input_batch_size=2, max_active_input_batches=2)
    text, corrupt, empty, bad_page, last = result.outputs
    assert squash(text["markdown"]) == "helloworld\nsecondlinehere\n\npagethreeapple"
    assert text["pages"] == 3
    assert text["skipped_pages"] == [2]
    assert corrupt.outcome is ro.ItemOutcome.FAILED
    assert corrupt.cause == "doc[1]: corrupt or not a PDF"
    assert (empty["pages"], empty["markdown"], empty["page_details"]) == (2, "", [])
    assert bad_page.outcome is ro.ItemOutcome.SUPPRESSED
    assert bad_page.cause.startswith("doc[3]/page[2]: cannot render page 3")
    assert squash(last["markdown"]) == "zulu9"
    summary = result.lineage()
    assert summary["sources"]["present"] == 3


def test_video_on_ray(cut_video: Path, tmp_path: Path) -> None:
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"\x00" * 64)
    result = ro.run(VideoPipeline(), [str(cut_video), str(junk)])
    video, broken = result.outputs
    assert [(c["start_s"], c["end_s"]) for c in video["clips"]] == [(0.0, 1.0), (2.0, 3.0)]
    assert video["static_clips"] == [1]
    assert broken.outcome is ro.ItemOutcome.FAILED
    assert broken.cause.startswith("video[1]: cannot open video")
    local = ro.run(VideoPipeline(), [str(cut_video)], backend="local").outputs
    assert local == [video]


def test_video_captions_on_ray(cut_video: Path, tmp_path: Path) -> None:
    """The VLM adapter inside Ray actors, with a tiny random Qwen2.5-VL built here."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from airflow_provider_rayorch.workloads.samples import write_tiny_qwen_vl

    model = write_tiny_qwen_vl(tmp_path / "tiny-qwen")
    pipeline = VideoPipeline(caption_model=model, caption_max_new_tokens=4)
    (video,) = ro.run(pipeline, [str(cut_video)]).outputs
    assert [c["index"] for c in video["clips"]] == [0, 2]
    assert all(isinstance(c["caption"], str) for c in video["clips"])
    (local,) = ro.run(pipeline, [str(cut_video)], backend="local").outputs
    assert local == video
