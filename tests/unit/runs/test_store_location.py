"""A run store whose location is a file (or lies under one) is refused, naming the fix."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from airflow_provider_rayorch.rayorch.errors import StoreError
from airflow_provider_rayorch.runs.store import RunStore

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize("below", ["", "runs", "runs/deeper"], ids=["the-file", "under", "deep"])
def test_a_run_store_at_or_under_a_file_is_refused_naming_it_and_the_fix(
    tmp_path: Path, below: str
) -> None:
    blocker = tmp_path / "store"
    blocker.write_text("not a folder")
    uri = str(blocker / below) if below else str(blocker)
    with pytest.raises(StoreError) as err:
        RunStore(uri).read_plan("r")
    text = str(err.value)
    assert f"run store {uri}" in text
    assert f"{blocker} is a file" in text
    assert "move that file away, or set `run_store`" in text


def test_a_run_store_in_a_folder_that_does_not_exist_yet_is_fine(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "new" / "runs"))
    assert store.read_plan("r") is None
