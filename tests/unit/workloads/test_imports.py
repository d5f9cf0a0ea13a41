"""Importing the workloads (as the Airflow worker does to compile) stays light."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pypdfium2", "rapidocr_onnxruntime", "cv2", "av", "torch", "transformers", "reportlab")


def test_pipeline_modules_import_no_optional_dependency() -> None:
    code = (
        "import sys\n"
        "import airflow_provider_rayorch.workloads.documents as d\n"
        "import airflow_provider_rayorch.workloads.video as v\n"
        "import airflow_provider_rayorch.workloads.adapters.mineru\n"
        "import airflow_provider_rayorch.workloads.adapters.docling\n"
        "import airflow_provider_rayorch.workloads.adapters.vlm\n"
        "d.DocumentPipeline().compile(); v.VideoPipeline(caption_model='/m').compile()\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"
