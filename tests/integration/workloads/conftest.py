"""A local Ray with 2 CPUs for the workload tests, plus generated inputs."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("rapidocr_onnxruntime")
pytest.importorskip("reportlab")
pytest.importorskip("av")
ray = pytest.importorskip("ray")

from airflow_provider_rayorch.workloads.samples import (  # noqa: E402
    Segment,
    write_scene_video,
    write_text_pdf,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Start Ray with 2 CPUs (or reuse one already started) and stop what we started."""
    if ray.is_initialized():
        yield
        return
    saved = {key: os.environ.get(key) for key in ("RAY_AUTH_MODE", "HOME")}
    os.environ["RAY_AUTH_MODE"] = "disabled"
    os.environ["HOME"] = str(tmp_path_factory.mktemp("ray-home"))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        runtime_env={"env_vars": {"PYTHONPATH": root}},
    )
    try:
        yield
    finally:
        ray.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


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
