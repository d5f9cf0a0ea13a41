"""A PDF given as a path names its file in the cause; bytes keep their wording."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.workloads._pdf import PdfError, open_pdf

if TYPE_CHECKING:
    from pathlib import Path

pytest.importorskip("pypdfium2")


def test_a_corrupt_file_is_named_by_its_base_name(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.pdf"
    path.write_bytes(b"%PDF-1.4 garbage")
    with pytest.raises(PdfError) as caught:
        open_pdf(str(path))
    cause = str(caught.value)
    assert cause.startswith("corrupt.pdf: corrupt or not a PDF (")
    assert str(tmp_path) not in cause  # the base name only: causes go to logs and reports


def test_corrupt_bytes_keep_their_wording() -> None:
    with pytest.raises(PdfError) as caught:
        open_pdf(b"%PDF-1.4 garbage")
    assert str(caught.value) == "corrupt or not a PDF"
