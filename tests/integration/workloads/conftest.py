"""Generated inputs for the workload tests on Ray (``ray_session`` comes from the parent)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("rapidocr_onnxruntime")
pytest.importorskip("reportlab")
pytest.importorskip("av")
pytest.importorskip("ray")

from airflow_provider_rayorch.workloads.samples import (
    Segment,
    write_scene_video,
    write_text_pdf,
)

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="session")
def inputs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("workload-ray-inputs")


@pytest.fixture(scope="session")
def text_pdf(inputs_dir: Path) -> Path:
    path = inputs_dir / "text.pdf"
    write_text_pdf(path, [["HELLO WORLD", "Second line here"], [], ["Page three apple"]])
    return path


@pytest.fixture(scope="session")
def cut_video(inputs_dir: Path) -> Path:
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
