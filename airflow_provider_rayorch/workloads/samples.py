"""Small synthetic inputs with known content: for tests, demos and example DAGs.

``write_pdfium_pdf`` and ``write_sample_documents`` need only ``pypdfium2`` (the
``documents`` extra); ``write_text_pdf`` needs ``reportlab`` (the ``dev`` extra);
``write_scene_video`` and ``write_sample_videos`` need ``av`` and ``numpy``;
``write_tiny_qwen_vl`` needs ``torch`` and ``transformers``.
"""

from __future__ import annotations

import ctypes
import io
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from airflow_provider_rayorch.workloads._deps import require
from airflow_provider_rayorch.workloads._pdf import PdfError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "SAMPLE_DOCUMENTS",
    "SAMPLE_VIDEOS",
    "Segment",
    "write_pdfium_pdf",
    "write_sample_documents",
    "write_sample_videos",
    "write_scene_video",
    "write_text_pdf",
    "write_tiny_qwen_vl",
]


def write_text_pdf(
    path: str | os.PathLike[str] | None,
    pages: Sequence[Sequence[str]],
    *,
    size: tuple[float, float] = (420.0, 300.0),
    font_size: int = 24,
) -> bytes:
    """Write a PDF with one page per entry of ``pages``, one line per string.

    An empty entry makes a blank page. Returns the PDF's bytes (also written to
    ``path`` when given).
    """
    canvas_mod: Any = require("reportlab.pdfgen.canvas", extra="dev", package="reportlab")
    buffer = io.BytesIO()
    pdf = canvas_mod.Canvas(buffer, pagesize=size)
    _width, height = size
    for lines in pages:
        pdf.setFont("Helvetica-Bold", font_size)
        for number, text in enumerate(lines):
            pdf.drawString(24, height - 48 - number * font_size * 1.8, text)
        pdf.showPage()
    pdf.save()
    data = buffer.getvalue()
    if path is not None:
        with open(path, "wb") as fh:
            fh.write(data)
    return data


def write_pdfium_pdf(
    path: str | os.PathLike[str] | None,
    pages: Sequence[Sequence[str]],
    *,
    size: tuple[float, float] = (420.0, 300.0),
    font_size: int = 24,
) -> bytes:
    """Like :func:`write_text_pdf`, drawn with PDFium: needs only the ``documents`` extra.

    One page per entry of ``pages``, one line per string, in PDF's standard
    Helvetica-Bold (no font file needed); an empty entry makes a blank page.
    Returns the PDF's bytes (also written to ``path`` when given).
    """
    pdfium: Any = require("pypdfium2", extra="documents")
    raw: Any = require("pypdfium2.raw", extra="documents", package="pypdfium2")
    width, height = size
    pdf = pdfium.PdfDocument.new()
    try:
        for lines in pages:
            page = pdf.new_page(width, height)
            try:
                for number, text in enumerate(lines):
                    _draw_line(
                        raw, pdf, page, text, font_size, 24, height - 48 - number * font_size * 1.8
                    )
                page.gen_content()
            finally:
                page.close()
        buffer = io.BytesIO()
        pdf.save(buffer)
    finally:
        pdf.close()
    data = buffer.getvalue()
    if path is not None:
        with open(path, "wb") as fh:
            fh.write(data)
    return data


def _draw_line(raw: Any, pdf: Any, page: Any, text: str, size: float, x: float, y: float) -> None:
    """Put one line of ``text`` on ``page`` with its baseline starting at (``x``, ``y``)."""
    obj = raw.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica-Bold", float(size))
    if not obj:
        raise PdfError("PDFium could not create a Helvetica-Bold text object")
    wide = ctypes.create_string_buffer((text + "\0").encode("utf-16-le"))
    if not raw.FPDFText_SetText(obj, ctypes.cast(wide, ctypes.POINTER(raw.FPDF_WCHAR))):
        raw.FPDFPageObj_Destroy(obj)
        raise PdfError(f"PDFium could not set the text {text!r}")
    raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, x, y)
    raw.FPDFPage_InsertObject(page.raw, obj)  # the page owns the object from here on


#: The example document set: file name -> lines per page; ``None`` marks the corrupt file.
SAMPLE_DOCUMENTS: dict[str, list[list[str]] | None] = {
    "annual-report.pdf": [
        ["Annual report 2026", "Prepared by Ray"],
        ["Revenue grew fast", "Costs were stable"],
        ["Thank you for reading"],
    ],
    "memo-with-blank-page.pdf": [["Team memo", "Meeting on Friday"], []],
    "invoice.pdf": [["Invoice 4711", "Total due 120 EUR"]],
    "corrupt.pdf": None,
}


def write_sample_documents(directory: str | os.PathLike[str]) -> dict[str, str]:
    """Write :data:`SAMPLE_DOCUMENTS` into ``directory``; returns file name -> path.

    The corrupt file is the first bytes of a valid PDF (a truncated download):
    PDFium refuses it as corrupt. Needs only the ``documents`` extra.
    """
    os.makedirs(directory, exist_ok=True)
    paths: dict[str, str] = {}
    for name, pages in SAMPLE_DOCUMENTS.items():
        path = os.path.join(os.fspath(directory), name)
        if pages is None:
            with open(path, "wb") as fh:
                fh.write(write_pdfium_pdf(None, [["truncated"]])[:64])
        else:
            write_pdfium_pdf(path, pages)
        paths[name] = path
    return paths


@dataclass(frozen=True)
class Segment:
    """One shot of a synthetic video: ``seconds`` long, a bar sweeping or still."""

    seconds: float
    kind: Literal["moving", "static"] = "moving"
    color: tuple[int, int, int] = (40, 90, 200)


def write_scene_video(
    path: str | os.PathLike[str],
    segments: Sequence[Segment],
    *,
    fps: int = 12,
    size: tuple[int, int] = (64, 48),
    codec: str = "libx264",
) -> float:
    """Encode ``segments`` back to back (hard cuts between them); returns the duration.

    Each segment has its own background colour; a ``moving`` one has a white bar
    sweeping across it, a ``static`` one a fixed gradient.
    """
    av: Any = require("av", extra="video")
    np: Any = require("numpy", extra="video")
    width, height = size
    ramp = np.linspace(0, 60, width, dtype=np.float32)[None, :, None]
    with av.open(os.fspath(path), mode="w") as container:
        stream = container.add_stream(codec, rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        if codec == "libx264":
            stream.options = {"crf": "18", "preset": "ultrafast", "tune": "zerolatency"}
        total = 0
        for segment in segments:
            base = np.clip(np.asarray(segment.color, np.float32)[None, None, :] + ramp, 0, 255)
            base = np.broadcast_to(base, (height, width, 3)).astype(np.uint8)
            count = round(segment.seconds * fps)
            for i in range(count):
                frame = base.copy()
                if segment.kind == "moving":
                    left = (i * 3) % width
                    frame[:, left : left + width // 8] = 255
                video_frame = av.VideoFrame.from_ndarray(frame, format="rgb24")
                video_frame.pts = total
                total += 1
                container.mux(stream.encode(video_frame))
        container.mux(stream.encode(None))
    return total / fps


#: The example video set: file name -> its shots (hard cuts between them).
SAMPLE_VIDEOS: dict[str, list[Segment]] = {
    "three-shots.mp4": [
        Segment(1.0, "moving", (200, 40, 40)),
        Segment(1.0, "static", (40, 160, 40)),
        Segment(1.0, "moving", (40, 40, 200)),
    ],
    "two-shots.mp4": [
        Segment(1.5, "moving", (180, 160, 30)),
        Segment(1.0, "moving", (30, 150, 170)),
    ],
}


def write_sample_videos(directory: str | os.PathLike[str]) -> dict[str, str]:
    """Write :data:`SAMPLE_VIDEOS` into ``directory``; returns file name -> path."""
    os.makedirs(directory, exist_ok=True)
    paths: dict[str, str] = {}
    for name, segments in SAMPLE_VIDEOS.items():
        path = os.path.join(os.fspath(directory), name)
        write_scene_video(path, segments)
        paths[name] = path
    return paths


_QWEN_SPECIALS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
)


def write_tiny_qwen_vl(directory: str | os.PathLike[str], *, seed: int = 0) -> str:
    """Save a tiny, randomly initialised Qwen2.5-VL model directory; returns its path.

    One text and one vision layer (hidden size 32), a word-level tokenizer over
    ASCII characters and the Qwen2-VL image processor: enough to exercise loading
    and generation code without downloading weights. Its output is gibberish.
    """
    torch: Any = require("torch", extra="vlm")
    transformers: Any = require("transformers", extra="vlm")
    tokenizers: Any = require("tokenizers", extra="vlm")
    image_processor_cls: Any = transformers.Qwen2VLImageProcessor
    try:  # transformers 5 names the torchvision-free processor explicitly
        from transformers.models.qwen2_vl import image_processing_pil_qwen2_vl as pil

        image_processor_cls = pil.Qwen2VLImageProcessorPil
    except ImportError:
        pass
    vocab: dict[str, int] = {}
    for token in [*_QWEN_SPECIALS, "system", "user", "assistant", *map(chr, range(33, 127))]:
        vocab.setdefault(token, len(vocab))
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<|endoftext|>"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    backend.add_special_tokens(list(_QWEN_SPECIALS))
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in _QWEN_SPECIALS}
    config = transformers.Qwen2_5_VLConfig(
        text_config={
            "vocab_size": len(vocab),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
            "bos_token_id": ids["<|im_start|>"],
            "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"],
        },
        vision_config={
            "depth": 1,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "out_hidden_size": 32,
            "fullatt_block_indexes": [0],
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
    )
    torch.manual_seed(seed)
    path = os.fspath(directory)
    transformers.Qwen2_5_VLForConditionalGeneration(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    image_processor_cls().save_pretrained(path)
    return path
