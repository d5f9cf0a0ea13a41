"""Input and setting errors say what was wrong and where: a sources glob whose folder
does not exist fails naming it, one that matches nothing skips the task saying so,
and a pipeline_kwargs key the factory does not take names the factory's parameters."""

from __future__ import annotations

from unittest import mock

import pytest
from airflow.sdk.exceptions import AirflowSkipException

from airflow_provider_rayorch.exceptions import RayOrchCompileFailed
from airflow_provider_rayorch.hooks.rayorch import RayOrchHook
from airflow_provider_rayorch.hooks.settings import RayOrchSettings
from airflow_provider_rayorch.operators.rayorch import RayOrchOperator
from airflow_provider_rayorch.runs.factory_args import kwargs_mismatch
from airflow_provider_rayorch.runs.globbing import SourcesNotFound
from airflow_provider_rayorch.sensors.rayorch import RayOrchRunSensor

pytestmark = pytest.mark.timeout(60)


def _op(tmp_path, **kw) -> RayOrchOperator:
    kw.setdefault("pipeline", "fake_pipelines:Square")
    op = RayOrchOperator(task_id="task", **kw)
    hook = RayOrchHook()
    hook.__dict__["settings"] = RayOrchSettings(run_store=str(tmp_path / "store"))
    op.__dict__["hook"] = hook
    return op


def _context():
    ti = mock.MagicMock(dag_id="dag", run_id="manual__1", task_id="task", map_index=-1)
    return {"ti": ti}


def test_a_glob_whose_folder_does_not_exist_fails_naming_the_folder(tmp_path) -> None:
    missing = tmp_path / "inbox-typo"
    op = _op(tmp_path, sources=f"{missing}/*.pdf")
    with pytest.raises(SourcesNotFound, match="inbox-typo") as info:
        op.prepare(_context())
    assert "does not exist" in str(info.value)
    assert not (tmp_path / "store").exists()  # no plan of zero sources written


def test_a_source_path_that_does_not_exist_fails(tmp_path) -> None:
    op = _op(tmp_path, sources=f"file://{tmp_path}/gone.pdf")
    with pytest.raises(SourcesNotFound, match=r"gone\.pdf"):
        op.prepare(_context())


def test_a_glob_that_matches_nothing_skips_the_task_saying_so(tmp_path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "notes.txt").write_text("not a pdf")
    op = _op(tmp_path, sources=f"{inbox}/*.pdf", sources_modified_after="2026-01-01T00:00:00")
    with pytest.raises(AirflowSkipException, match="matched no file") as info:
        op.prepare(_context())
    assert str(inbox) in str(info.value)
    assert "2026-01-01" in str(info.value)  # the window is the usual reason: say it


def test_a_glob_that_matches_runs_as_before(tmp_path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.pdf").write_bytes(b"%PDF")
    plan = _op(tmp_path, sources=f"{inbox}/*.pdf").prepare(_context())
    assert list(plan.rows) == [f"{inbox}/a.pdf"]


def test_the_run_sensor_skips_when_the_submit_task_prepared_no_run() -> None:
    none = "None"  # what a template renders for an XCom the submit task never pushed
    sensor = RayOrchRunSensor(task_id="run", run_id=none, run_store=none, job_id=none)
    with pytest.raises(AirflowSkipException, match="no RayOrch run"):
        sensor.execute(_context())


def test_an_unknown_pipeline_kwarg_names_the_factory_parameters(tmp_path) -> None:
    op = _op(tmp_path, sources=[1, 2], pipeline_kwargs={"poisson": [1]})
    with pytest.raises(RayOrchCompileFailed) as info:
        op.prepare(_context())
    message = str(info.value)
    assert "'poisson'" in message
    assert "poison=None" in message
    assert "broken=False" in message
    assert "fake_pipelines:Square" in message


class _Needs:
    def __init__(self, lang: str, *, dpi: int = 150) -> None: ...


class _Open:
    def __init__(self, **options: object) -> None: ...


@pytest.mark.parametrize(
    ("factory", "kwargs", "expected"),
    [
        pytest.param(_Needs, {"lang": "en"}, None, id="fits"),
        pytest.param(_Needs, {}, "it needs 'lang'", id="missing"),
        pytest.param(_Needs, {"lang": "en", "dpii": 1}, "lang (required), dpi=150", id="typo"),
        pytest.param(_Open, {"anything": 1}, None, id="var-keyword"),
    ],
)
def test_kwargs_mismatch(factory, kwargs, expected) -> None:
    found = kwargs_mismatch(factory, kwargs, "m:F")
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert expected in found
