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


# =============================================================================
# Nested expand: document -> page -> table job -> page -> document
# =============================================================================
class ParseDocuments:
    """``"doc=2,0,1"`` -> one page per number, each with that many tables."""

    def run(self, documents: list[str]) -> list[list[dict[str, Any]]]:
        out = []
        for doc in documents:
            name, _, counts = doc.partition("=")
            out.append(
                [
                    {"doc": name, "page": i, "tables": int(n)}
                    for i, n in enumerate(counts.split(","))
                ]
            )
        return out


class LayoutPages:
    def run(self, pages: list[dict[str, Any]]) -> list[str]:
        return [f"layout{p['page']}" for p in pages]


class OcrPages:
    def run(self, pages: list[dict[str, Any]], layouts: list[str]) -> list[str]:
        return [f"{p['doc']}.{p['page']}:{lay}" for p, lay in zip(pages, layouts, strict=True)]


class PostprocessPages:
    def run(
        self, pages: list[dict[str, Any]], layouts: list[str], ocr: list[str]
    ) -> list[dict[str, Any]]:
        return [{**p, "text": t} for p, t in zip(pages, ocr, strict=True)]


class ExpandTableJobs:
    def run(self, pages: list[dict[str, Any]]) -> list[list[str]]:
        return [[f"{p['doc']}.{p['page']}.t{k}" for k in range(p["tables"])] for p in pages]


class TableCore:
    def run(self, jobs: list[str]) -> list[str]:
        return [job.upper() for job in jobs]


class ReducePage:
    def run(self, tables: list[list[str]], pages: list[dict[str, Any]]) -> list[str]:
        return [f"{p['text']}|{'+'.join(t)}" for t, p in zip(tables, pages, strict=True)]


class ReduceDocument:
    def run(self, pages: list[list[str]]) -> list[str]:
        return [" / ".join(group) for group in pages]


class DocumentTopologyPipeline(ro.Pipeline):
    def __init__(self, *, workers: int = 2, batch_size: int = 4) -> None:
        stage = {"replicas": workers, "batch_size": batch_size, "num_cpus": 0}
        self.parse = ro.RayModule(ParseDocuments).ray_options(
            replicas=workers, batch_size=1, num_cpus=0
        )
        self.layout = ro.RayModule(LayoutPages).ray_options(**stage)
        self.ocr = ro.RayModule(OcrPages).ray_options(**stage)
        self.postprocess = ro.RayModule(PostprocessPages).ray_options(**stage)
        self.table_prepare = ro.RayModule(ExpandTableJobs).ray_options(**stage)
        self.table_core = ro.RayModule(TableCore).ray_options(**stage)
        self.page_assemble = ro.RayModule(ReducePage).ray_options(**stage)
        self.document_assemble = ro.RayModule(ReduceDocument).ray_options(
            replicas=1, batch_size=2, num_cpus=0
        )

    def forward(self, documents: ro.Port) -> ro.Port:
        pages = ro.F.expand(self.parse(documents))
        layouts = self.layout(pages)
        ocr = self.ocr(pages, layouts)
        postprocessed = self.postprocess(pages, layouts, ocr)
        table_jobs = ro.F.expand(self.table_prepare(postprocessed))
        tables = self.table_core(table_jobs)
        assembled_pages = self.page_assemble(ro.F.reduce(tables), postprocessed)
        return self.document_assemble(ro.F.reduce(assembled_pages))


def test_nested_expand_document_page_table() -> None:
    out = run_local(DocumentTopologyPipeline(batch_size=3), ["a=2,0,1", "b=0", "c=3"])
    assert out == [
        "a.0:layout0|A.0.T0+A.0.T1 / a.1:layout1| / a.2:layout2|A.2.T0",
        "b.0:layout0|",
        "c.0:layout0|C.0.T0+C.0.T1+C.0.T2",
    ]


# =============================================================================
# MinerU: reduce_aligned with two outputs, members from the model's Port
# =============================================================================
class PdfToPages:
    def __init__(self, *, dpi: int) -> None:
        self.dpi = dpi

    def run(self, pdfs: list[str]) -> list[list[dict[str, Any]]]:
        return [
            [{"pdf": pdf, "page": i, "dpi": self.dpi, "text": w} for i, w in enumerate(pdf.split())]
            for pdf in pdfs
        ]


class VlmOcrPage:
    def __init__(self, *, model: str, gpu_memory_utilization: float) -> None:
        self.model = model

    def run(self, pages: list[dict[str, Any]]) -> list[str]:
        return [p["text"].upper() for p in pages]


class PdfMetadata:
    def run(self, pdfs: list[str]) -> list[str]:
        return [pdf.split()[0] if pdf.split() else "empty" for pdf in pdfs]


class AssembleDoc:
    def __init__(self, *, output_dir: str) -> None:
        self.output_dir = output_dir

    def run(
        self, contents: list[list[str]], pages: list[list[dict[str, Any]]], stems: list[str]
    ) -> list[dict[str, Any]]:
        return [
            {"pdf": stem, "md": " ".join(c), "pages": [p["page"] for p in ps]}
            for c, ps, stem in zip(contents, pages, stems, strict=True)
        ]


@ro.function
def not_blank(pages: list[dict[str, Any]]) -> list[bool]:
    return [p["text"] != "_" for p in pages]


class MinerUPipeline(ro.Pipeline):
    def __init__(self, *, output_dir: str, model: str, num_gpus: int = 1) -> None:
        self.render = (
            ro.RayModule(PdfToPages)
            .pre_init(dpi=200)
            .ray_options(replicas=num_gpus, batch_size=1, num_cpus=1)
        )
        self.ocr = (
            ro.RayModule(VlmOcrPage)
            .pre_init(model=model, gpu_memory_utilization=0.8)
            .ray_options(replicas=num_gpus, batch_size=64, num_gpus=0, num_cpus=1)
        )
        self.metadata = ro.RayModule(PdfMetadata).ray_options(replicas=1, batch_size=32, num_cpus=1)
        self.keep = not_blank
        self.assemble = (
            ro.RayModule(AssembleDoc)
            .pre_init(output_dir=output_dir)
            .ray_options(replicas=num_gpus, batch_size=4, num_cpus=1)
        )

    def forward(self, pdfs: ro.Port) -> ro.Port:
        pages = ro.F.expand(self.render(pdfs))
        contents = ro.F.filter(self.ocr(pages), self.keep(pages))
        stems = self.metadata(pdfs)
        content_groups, ordered_page_groups = ro.F.reduce_aligned(contents, pages, members=contents)
        return self.assemble(content_groups, ordered_page_groups, stems)


def test_reduce_aligned_with_two_outputs_keeps_pages_and_contents_aligned() -> None:
    out = run_local(MinerUPipeline(output_dir="/tmp/out", model="m"), ["x _ y", "_ _", "z"])
    assert out == [
        {"pdf": "x", "md": "X Y", "pages": [0, 2]},
        {"pdf": "_", "md": "", "pages": []},
        {"pdf": "z", "md": "Z", "pages": [0]},
    ]


# =============================================================================
# Several output Ports through num_outputs, also from functions
# =============================================================================
class SplitWords:
    def run(self, texts: list[str]) -> tuple[list[list[str]], list[list[int]]]:
        words = [t.split() for t in texts]
        return words, [[len(w) for w in ws] for ws in words]


def stats(words: list[list[str]]) -> tuple[list[int], list[str], list[str]]:
    return (
        [len(w) for w in words],
        [w[0] if w else "" for w in words],
        [w[-1] if w else "" for w in words],
    )


@ro.function(num_outputs=2)
def tag(words: list[str], lengths: list[int]) -> tuple[list[str], list[bool]]:
    return [f"{w}/{n}" for w, n in zip(words, lengths, strict=True)], [n > 2 for n in lengths]


class MultiOutputPipeline(ro.Pipeline):
    def __init__(self) -> None:
        self.split = ro.RayModule(SplitWords, num_outputs=2).ray_options(batch_size=2)
        self.stats = ro.function(stats, num_outputs=3)
        self.tag = tag.ray_options(batch_size=3)

    def forward(self, texts: ro.Port) -> tuple[ro.Port, ...]:
        words, lengths = self.split(texts)
        count, first, last = self.stats(words)
        word, length = ro.F.expand_aligned(words, lengths)
        tagged, long = self.tag(word, length)
        return count, first, last, ro.F.reduce(ro.F.filter(tagged, long))


def test_several_output_ports_through_num_outputs() -> None:
    plan = MultiOutputPipeline().compile()
    assert plan.output_names == ("out0", "out1", "out2", "out3")
    count, first, last, long_words = run_local(MultiOutputPipeline(), ["a bcd ef", "", "xyz"])
    assert count == [3, 0, 1]
    assert first == ["a", "", "xyz"]
    assert last == ["ef", "", "xyz"]
    assert long_words == [["bcd/3"], [], ["xyz/3"]]


# =============================================================================
# Two model stages in a chain (dual vLLM), and one model stack called twice
# =============================================================================
class Generate:
    def __init__(self, *, model: str, max_tokens: int = 128, temperature: float = 0.0) -> None:
        self.model, self.max_tokens = model, max_tokens

    def run(self, prompts: list[str]) -> list[str]:
        return [f"{self.model}({p})"[: self.max_tokens] for p in prompts]


class BuildRefinementPrompts:
    def run(self, answers: list[str]) -> list[str]:
        return [f"refine {a}" for a in answers]


class BuildResults:
    def run(self, prompts: list[str], first: list[str], final: list[str]) -> list[dict[str, str]]:
        return [
            {"prompt": p, "first": a, "final": b}
            for p, a, b in zip(prompts, first, final, strict=True)
        ]


class ModelStack:
    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, values: list[str], *, stage: str) -> list[str]:
        if stage not in ("layout", "recognize"):
            raise ValueError(stage)
        return [f"{stage}[{v}]" for v in values]


class DualModelPipeline(ro.Pipeline):
    def __init__(self, *, model_a: str, model_b: str, batch_size: int = 8) -> None:
        model_options = {"replicas": 1, "batch_size": batch_size, "num_cpus": 1, "num_gpus": 0.0}
        self.model_a = ro.RayModule(Generate).pre_init(model=model_a).ray_options(**model_options)
        self.prompt = ro.RayModule(BuildRefinementPrompts).ray_options(
            replicas=1, batch_size=batch_size, num_cpus=1
        )
        self.model_b = (
            ro.RayModule(Generate)
            .pre_init(model=model_b, max_tokens=64)
            .ray_options(**model_options)
        )
        self.result = ro.RayModule(BuildResults).ray_options(replicas=1, batch_size=batch_size)
        self.stack = ro.RayModule(ModelStack).pre_init("stack").ray_options(replicas=2)

    def forward(self, prompts: ro.Port) -> tuple[ro.Port, ro.Port]:
        first_answers = self.model_a(prompts)
        refinement_prompts = self.prompt(first_answers)
        final_answers = self.model_b(refinement_prompts)
        layouts = self.stack(prompts, stage="layout")
        recognized = self.stack(layouts, stage="recognize")
        return self.result(prompts, first_answers, final_answers), recognized


def test_two_model_stages_in_a_chain() -> None:
    pipeline = DualModelPipeline(model_a="A", model_b="B", batch_size=2)
    plan = pipeline.compile()
    assert [m.name for m in plan.modules] == ["model_a", "prompt", "model_b", "stack", "result"]
    results, recognized = run_local(pipeline, ["p1", "p2", "p3"])
    assert results[1] == {"prompt": "p2", "first": "A(p2)", "final": "B(refine A(p2))"}
    assert [r["final"] for r in results] == [
        "B(refine A(p1))",
        "B(refine A(p2))",
        "B(refine A(p3))",
    ]
    assert recognized == ["recognize[layout[p1]]", "recognize[layout[p2]]", "recognize[layout[p3]]"]
