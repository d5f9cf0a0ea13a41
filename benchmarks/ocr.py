"""Workload 2: real OCR on locally generated PDFs (CPU work, no emulation).

PDFs are written with reportlab, then ``OpenPdf`` -> expand pages ->
``RenderPage`` (pypdfium2) -> filter blank pages -> ``DetectText`` (rapidocr)
-> expand regions -> ``RecognizeText`` batched across pages and documents ->
reduce to pages -> ``AssemblePage`` -> reduce to documents ->
``AssembleDocument``: the stages of ``airflow_provider_rayorch.workloads.documents``,
wired once for any engine with the rayorch spelling so both engines run the
same graph with the same options. Ray Data and Daft run the same stages
(``ocr_peers.py``), flattened, with two group-bys for the two gathers.
"""

from __future__ import annotations

import importlib
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from .measure import all_actors_up

__all__ = ["available", "run_all"]

WORDS = [
    "lineage",
    "ordinal",
    "parent",
    "gather",
    "batch",
    "page",
    "table",
    "region",
    "model",
    "queue",
]


def available() -> str | None:
    """None when the OCR stack is importable, else why not."""
    for module in ("pypdfium2", "rapidocr_onnxruntime", "reportlab"):
        try:
            importlib.import_module(module)
        except ImportError:
            return f"{module} is not installed (pip install -e '.[documents,dev]')"
    return None


def make_pdfs(directory: Path, docs: int, seed: int = 7) -> list[str]:
    from airflow_provider_rayorch.workloads.samples import write_text_pdf

    rng = random.Random(seed)
    paths = []
    for i in range(docs):
        pages = []
        for _ in range(rng.choice((1, 1, 2, 3, 5))):
            lines = rng.randint(0, 3)
            pages.append([" ".join(rng.choices(WORDS, k=3)) for _ in range(lines)])
        path = directory / f"doc{i:03d}.pdf"
        write_text_pdf(path, pages)
        paths.append(str(path))
    return paths


def pipeline(ro: Any) -> Any:
    """The document pipeline's graph and options, for the engine ``ro``."""
    from airflow_provider_rayorch.workloads.document_stages import (
        AssembleDocument,
        AssemblePage,
        DetectText,
        OpenPdf,
        RecognizeText,
        RenderPage,
    )

    light = {"num_cpus": 0.1}

    class Ocr(ro.Pipeline):
        def __init__(self) -> None:
            self.open = ro.RayModule(OpenPdf).returns(2).ray_options(batch_size=8, **light)
            self.render = (
                ro.RayModule(RenderPage)
                .pre_init(dpi=150.0)
                .returns(2)
                .ray_options(replicas=1, batch_size=4, num_cpus=0.5)
            )
            self.detect = ro.RayModule(DetectText).ray_options(
                replicas=1, batch_size=2, num_cpus=0.5
            )
            self.recognize = ro.RayModule(RecognizeText).ray_options(
                replicas=1, batch_size=32, num_cpus=0.5
            )
            self.assemble_page = (
                ro.RayModule(AssemblePage)
                .pre_init(min_score=0.5)
                .ray_options(batch_size=16, **light)
            )
            self.assemble_doc = ro.RayModule(AssembleDocument).ray_options(batch_size=8, **light)

        def forward(self, doc: Any) -> Any:
            page_indexes, info = self.open(doc)
            page = ro.F.expand(page_indexes)
            image, keep = self.render(page, ro.F.broadcast(doc, like=page))
            region = ro.F.expand(self.detect(ro.F.filter(image, keep)))
            detail = self.assemble_page(ro.F.reduce(self.recognize(region)), page)
            return self.assemble_doc(ro.F.reduce(detail), info)

    return Ocr()


def _text(outputs: list[Any]) -> list[str]:
    return [o["markdown"] if isinstance(o, dict) else repr(o) for o in outputs]


def run_all(docs: int, *, systems: tuple[str, ...] | None, rounds: int) -> dict[str, Any]:
    from .systems import AVAILABLE, OURS, PAPER

    why = available()
    out: dict[str, Any] = {"systems": {}, "skipped": {}}
    if why:
        out["skipped"] = dict.fromkeys((OURS, PAPER, "Ray Data", "Daft"), why)
        return out
    engines = {OURS: "airflow_provider_rayorch.rayorch", PAPER: "rayorch"}
    with tempfile.TemporaryDirectory() as tmp:
        paths = make_pdfs(Path(tmp), docs)
        texts: dict[str, list[str]] = {}
        for name, module in engines.items():
            if (systems is not None and name not in systems) or not AVAILABLE[name]():
                out["skipped"][name] = "not installed or not selected"
                continue
            ro = importlib.import_module(module)
            cold, warm = [], []
            for _ in range(rounds):
                t = time.perf_counter()
                with ro.Executor(pipeline(ro)) as ex:
                    result = ex.run(paths, input_batch_size=4, max_active_input_batches=2)
                    cold.append(time.perf_counter() - t)
                    all_actors_up(ex)
                    t = time.perf_counter()
                    result = ex.run(paths, input_batch_size=4, max_active_input_batches=2)
                    warm.append(time.perf_counter() - t)
            texts[name] = _text(list(result.outputs))
            out["systems"][name] = {
                "cold_s": statistics.median(cold),
                "warm_s": statistics.median(warm),
            }
        from . import ocr_peers

        peers = {"Ray Data": ocr_peers.run_raydata, "Daft": ocr_peers.run_daft}
        for name, run in peers.items():
            if (systems is not None and name not in systems) or not AVAILABLE[name]():
                out["skipped"][name] = "not installed or not selected"
                continue
            figures = run(paths, rounds=rounds)
            texts[name] = figures.pop("texts")
            out["systems"][name] = figures
        first = next(iter(texts.values()), [])
        for name in texts:
            out["systems"][name]["same_text_as_first"] = texts[name] == first
            out["systems"][name]["docs_with_text"] = sum(1 for t in texts[name] if t.strip())
    out["note"] = f"{docs} generated PDFs; {rounds} round(s), median."
    return out
