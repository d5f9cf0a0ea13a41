"""Each trigger serializes exactly its constructor's keywords, declared once."""

from __future__ import annotations

import inspect

import pytest

from airflow_provider_rayorch.triggers.rayorch import (
    RayOrchJobTrigger,
    RayOrchMicrobatchTrigger,
    RunOptions,
)
from airflow_provider_rayorch.triggers.sources import RayOrchNewSourcesTrigger


@pytest.mark.parametrize(
    "trigger",
    [
        RayOrchJobTrigger(job_id="j", run_id="r", run_store="/s", address="http://h:1"),
        RayOrchMicrobatchTrigger(run_id="r", run_store="/s", index=2, job_id="j"),
        RayOrchNewSourcesTrigger("/in/*.pdf", asset_name="a"),
    ],
    ids=lambda trigger: type(trigger).__name__,
)
def test_a_trigger_serializes_its_constructor_keywords(trigger) -> None:
    path, kwargs = trigger.serialize()
    parameters = inspect.signature(type(trigger).__init__).parameters.values()
    keywords = {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    keywords.discard("self")
    if any(p.kind is p.VAR_KEYWORD for p in parameters):  # **options: Unpack[RunOptions]
        keywords |= RunOptions.__optional_keys__
    assert path == f"{type(trigger).__module__}.{type(trigger).__qualname__}"
    assert set(kwargs) == keywords
    assert type(trigger)(**kwargs).serialize() == (path, kwargs)
