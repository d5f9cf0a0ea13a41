"""MinerU and Docling adapters against stand-ins of their documented Python APIs.

Neither library (nor its models) is installed here: these tests check the
adapters' loading code, per-page calls, failure mapping and pipeline wiring
against small fakes of ``mineru.MinerUParser`` and Docling's
``DocumentConverter``. They do not run MinerU or Docling.
"""

from __future__ import annotations

import enum
import os
import sys
import types
from typing import TYPE_CHECKING, Any

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.outcomes import RecordFailure
from airflow_provider_rayorch.workloads._deps import MissingDependencyError, MissingModelError
from airflow_provider_rayorch.workloads.adapters.docling import (
    DoclingDocumentPipeline,
    DoclingPages,
)
from airflow_provider_rayorch.workloads.adapters.mineru import MinerUDocumentPipeline, MinerUPages
from airflow_provider_rayorch.workloads.samples import write_text_pdf

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def models_dir(tmp_path: Path) -> str:
    root = tmp_path / "models"
    root.mkdir()
    (root / "weights.bin").write_bytes(b"\0")
    return str(root)


@pytest.fixture
def fake_mineru(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    class Result:
        def __init__(self, text: str) -> None:
            self.text = text

        def markdown(self) -> str:
            return self.text

    class MinerUParser:
        def __init__(self, **kwargs: Any) -> None:
            calls.append({"init": kwargs, "source": os.environ.get("MINERU_MODEL_SOURCE")})

        def parse(self, path: str, *, page_range: str = "") -> Result:
            with open(path, "rb") as fh:
                assert fh.read(5) == b"%PDF-"
            calls.append({"path": path, "page_range": page_range})
            if page_range == "3":
                raise RuntimeError("layout model exploded")
            return Result(f"# page {page_range}\n")

    module = types.ModuleType("mineru")
    module.MinerUParser = MinerUParser  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mineru", module)
    monkeypatch.delenv("MINERU_MODEL_BASE_DIR", raising=False)
    monkeypatch.delenv("MINERU_MODEL_SOURCE", raising=False)
    return calls


def test_mineru_pages_load_local_models(fake_mineru: list[dict[str, Any]], models_dir: str) -> None:
    stage = MinerUPages(models_dir, tier="flash", parse_mode="ocr")
    assert fake_mineru[0] == {
        "init": {"tier": "flash", "parse_mode": "ocr", "image_analysis": False},
        "source": "local",
    }
    assert os.environ["MINERU_MODEL_BASE_DIR"] == models_dir
    pdf = write_text_pdf(None, [["A"], ["B"], ["C"]])
    out = stage.run([0, 1, 2], [pdf, pdf, pdf])
    assert out[:2] == [{"page": 1, "markdown": "# page 1"}, {"page": 2, "markdown": "# page 2"}]
    assert isinstance(out[2], RecordFailure)
    assert "page 3" in out[2].cause
    assert "layout model exploded" in out[2].cause
    spilled = {c["path"] for c in fake_mineru[1:]}
    assert len(spilled) == 1  # the bytes went to one temp file for all three pages


def test_mineru_pipeline_end_to_end(fake_mineru: list[dict[str, Any]], models_dir: str) -> None:
    two = write_text_pdf(None, [["A"], ["B"]])
    three = write_text_pdf(None, [["A"], ["B"], ["C"]])
    result = ro.run(MinerUDocumentPipeline(models_dir), [two, three], backend="local")
    doc, failed = result.outputs
    assert doc["markdown"] == "# page 1\n\n# page 2"
    assert doc["pages"] == 2
    assert failed.outcome is ro.ItemOutcome.SUPPRESSED
    assert failed.cause.startswith("doc[1]/page[2]: MinerU failed on page 3")


class _Status(enum.StrEnum):
    SUCCESS = "success"
    PARTIAL_SUCCESS = "partial_success"
    FAILURE = "failure"


@pytest.fixture
def fake_docling(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []

    class Document:
        def __init__(self, text: str) -> None:
            self.text = text

        def export_to_markdown(self) -> str:
            return self.text

    class Result:
        def __init__(self, status: _Status, text: str) -> None:
            self.status, self.document, self.errors = status, Document(text), ["bad xref"]

    class DocumentConverter:
        def __init__(self, format_options: dict[str, Any]) -> None:
            calls.append(format_options)

        def convert(
            self, source: Any, *, page_range: tuple[int, int], raises_on_error: bool
        ) -> Result:
            calls.append((source, page_range, raises_on_error))
            status = _Status.FAILURE if page_range[0] == 2 else _Status.SUCCESS
            return Result(status, f"## p{page_range[0]}")

    class Options:
        def __init__(self, **kwargs: Any) -> None:
            self.kwargs = kwargs

    class Stream:
        def __init__(self, name: str, stream: Any) -> None:
            self.name, self.stream = name, stream

    names = {
        "docling": {},
        "docling.document_converter": {
            "DocumentConverter": DocumentConverter,
            "PdfFormatOption": lambda pipeline_options: ("pdf", pipeline_options),
        },
        "docling.datamodel": {},
        "docling.datamodel.pipeline_options": {"PdfPipelineOptions": Options},
        "docling.datamodel.base_models": {
            "ConversionStatus": _Status,
            "InputFormat": types.SimpleNamespace(PDF="pdf"),
            "DocumentStream": Stream,
        },
    }
    for name, attrs in names.items():
        module = types.ModuleType(name)
        for key, value in attrs.items():
            setattr(module, key, value)
        monkeypatch.setitem(sys.modules, name, module)
    return calls


def test_docling_pages(fake_docling: list[Any], models_dir: str) -> None:
    stage = DoclingPages(models_dir, do_ocr=True)
    (options,) = fake_docling
    kind, pipeline_options = options["pdf"]
    assert kind == "pdf"
    assert pipeline_options.kwargs == {
        "artifacts_path": models_dir,
        "do_ocr": True,
        "do_table_structure": True,
    }
    pdf = write_text_pdf(None, [["A"], ["B"]])
    out = stage.run([0, 1], ["/data/x.pdf", pdf])
    assert out[0] == {"page": 1, "markdown": "## p1"}
    assert isinstance(out[1], RecordFailure)
    assert "page 2" in out[1].cause
    assert "bad xref" in out[1].cause
    assert fake_docling[1] == ("/data/x.pdf", (1, 1), False)
    stream = fake_docling[2][0]
    assert stream.stream.read() == pdf


def test_docling_pipeline_end_to_end(fake_docling: list[Any], models_dir: str) -> None:
    one = write_text_pdf(None, [["A"]])
    (doc,) = ro.run(DoclingDocumentPipeline(models_dir), [one], backend="local").outputs
    assert doc["markdown"] == "## p1"
    assert doc["page_details"] == [{"page": 1, "markdown": "## p1"}]


@pytest.mark.parametrize(
    ("make", "extra"),
    [
        pytest.param(lambda d: MinerUPages(d), "mineru", id="mineru"),
        pytest.param(lambda d: DoclingPages(d), "docling", id="docling"),
    ],
)
def test_missing_library_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, models_dir: str, make: Any, extra: str
) -> None:
    for name in ("mineru", "docling", "docling.document_converter"):
        monkeypatch.setitem(sys.modules, name, None)  # makes the import fail
    with pytest.raises(MissingDependencyError, match=rf"airflow-provider-rayorch\[{extra}\]"):
        make(models_dir)


@pytest.mark.parametrize(
    ("make", "hint"),
    [
        pytest.param(lambda d: MinerUPages(d), "mineru-models-download", id="mineru"),
        pytest.param(lambda d: DoclingPages(d), "docling-tools models download", id="docling"),
    ],
)
def test_missing_models_name_the_download(tmp_path: Path, make: Any, hint: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for directory in (str(tmp_path / "absent"), str(empty)):
        with pytest.raises(MissingModelError, match=hint):
            make(directory)
