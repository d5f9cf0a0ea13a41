"""Generated inputs with known content for the workload tests."""

from __future__ import annotations

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("rapidocr_onnxruntime")
pytest.importorskip("reportlab")
pytest.importorskip("av")

from typing import TYPE_CHECKING

from airflow_provider_rayorch.workloads.samples import (
    Segment,
    write_scene_video,
    write_text_pdf,
)

if TYPE_CHECKING:
    from pathlib import Path

TEXT_PAGES = [["HELLO WORLD", "Second line here"], [], ["Page three apple"]]


@pytest.fixture(scope="session")
def inputs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("workload-inputs")


@pytest.fixture(scope="session")
def text_pdf(inputs_dir: Path) -> Path:
    """Three pages: two lines, blank, one line."""
    path = inputs_dir / "text.pdf"
    write_text_pdf(path, TEXT_PAGES)
    return path


@pytest.fixture(scope="session")
def blank_pdf(inputs_dir: Path) -> Path:
    path = inputs_dir / "blank.pdf"
    write_text_pdf(path, [[], []])
    return path


@pytest.fixture(scope="session")
def cut_video(inputs_dir: Path) -> Path:
    """Hard cuts at 1.0 s and 2.0 s; the middle shot is static; 3.0 s long."""
    path = inputs_dir / "cuts.mp4"
    write_scene_video(
        path,
        [
            Segment(1.0, "moving", (200, 40, 40)),
            Segment(1.0, "static", (40, 160, 40)),
            Segment(1.0, "moving", (40, 40, 200)),
        ],
    )
    return path


@pytest.fixture(scope="session")
def bad_page_pdf() -> bytes:
    """Claims three pages; the third cannot be loaded."""
    data = write_text_pdf(None, [["ONE"], ["TWO"]])
    assert b"/Count 2" in data
    return data.replace(b"/Count 2", b"/Count 3")
