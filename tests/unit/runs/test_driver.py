from __future__ import annotations

import pytest

from airflow_provider_rayorch import job
from airflow_provider_rayorch.runs import driver, exit_codes, pipeline_load
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore
from tests.unit.runs.plans import write_fake_plan

pytestmark = pytest.mark.timeout(30)


def _store_local_plan(tmp_path, spec: str, sources: list, **record) -> RunStore:
    """A plan for the real engine's reference executor (no Ray)."""
    store = RunStore(str(tmp_path))
    fingerprint = pipeline_load.import_factory(spec)().compile().fingerprint
    store.write_plan(
        PlanRecord(
            run_id="run",
            pipeline=spec,
            fingerprint=fingerprint,
            sources=sources,
            backend="local",
            **record,
        )
    )
    return store


def test_run_writes_outputs_manifests_and_run_manifest(tmp_path, fake_engine) -> None:
    store = write_fake_plan(tmp_path, poison=[4])
    summary = driver.run_plan(store, "run")
    assert store.committed("run") == frozenset({0, 1, 2})
    assert summary["state"] == "failed"
    assert summary["sources"] == {
        "total": 7,
        "present": 6,
        "dropped": 0,
        "failed": 1,
        "suppressed": 0,
    }
    assert summary["failures"] == [{"source": 4, "outcome": "failed", "cause": "doc[4]: poisoned"}]
    assert [m["index"] for m in summary["microbatches"]] == [0, 1, 2]
    manifest = plain(store.manifest_record("run", 1))
    assert manifest["run_id"] == "run"
    assert manifest["pipeline"] == "fake_pipelines:Square"
    assert manifest["outputs"]["uri"].endswith("mb-00001")
    assert plain(store.run_manifest_record("run")) == summary
    rows = store.read_outputs("run")
    assert [r["value"] for r in rows] == [0, 1, 4, 9, None, 25, 36]


def test_restart_skips_committed_microbatches(tmp_path, fake_engine, monkeypatch) -> None:
    store = write_fake_plan(tmp_path, n=10, size=2)
    monkeypatch.setattr(fake_engine.FakeExecutor, "crash_after", 2)
    with pytest.raises(fake_engine.CrashAfter):
        driver.run_plan(store, "run")
    assert store.committed("run") == frozenset({0, 1})
    assert store.run_manifest_record("run") is None
    monkeypatch.setattr(fake_engine.FakeExecutor, "crash_after", None)
    driver.run_plan(store, "run")
    assert fake_engine.RAN == [0, 1, 2, 3, 4]  # nothing recomputed, nothing duplicated
    assert [r["value"] for r in store.read_outputs("run")] == [x * x for x in range(10)]
    fake_engine.RAN.clear()
    again = driver.run_plan(store, "run")  # everything committed: no executor at all
    assert fake_engine.RAN == []
    assert again["sources"]["present"] == 10


def test_changed_plan_is_refused(tmp_path, fake_engine, monkeypatch) -> None:
    store = write_fake_plan(tmp_path)
    monkeypatch.setattr(fake_engine.Square, "salt", "v2")
    with pytest.raises(driver.DriverError) as err:
        driver.run_plan(store, "run")
    assert err.value.exit_code == exit_codes.EXIT_PLAN_CHANGED
    assert store.committed("run") == frozenset()
    code = driver.main(["--run-store", str(tmp_path), "--run-id", "run"])
    assert code == exit_codes.EXIT_PLAN_CHANGED


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        pytest.param("no_such_module:X", exit_codes.EXIT_IMPORT, id="missing-module"),
        pytest.param("fake_pipelines:Nope", exit_codes.EXIT_IMPORT, id="missing-attr"),
        pytest.param("fake_pipelines:Broken", exit_codes.EXIT_COMPILE, id="does-not-compile"),
    ],
)
def test_import_and_compile_errors(tmp_path, fake_engine, capsys, spec, code) -> None:
    from airflow_provider_rayorch.runs.store import PlanRecord

    store = RunStore(str(tmp_path))
    store.write_plan(PlanRecord(run_id="run", pipeline=spec, fingerprint="x", sources=[1]))
    assert driver.main(["--run-store", str(tmp_path), "--run-id", "run"]) == code
    out = capsys.readouterr().out
    assert "RAYORCH_ERROR" in out
    if code == exit_codes.EXIT_IMPORT:
        assert "py_modules" in out


def test_missing_plan(tmp_path, fake_engine) -> None:
    assert driver.main(["--run-store", str(tmp_path), "--run-id", "nope"]) == exit_codes.EXIT_ERROR


def test_real_engine_local_backend_with_two_source_columns(tmp_path) -> None:
    """The driver against the real engine (reference executor, no Ray)."""
    store = _store_local_plan(
        tmp_path,
        "engine_pipelines:TwoColumns",
        [[1, "x"], [2, "y"], [3, "z"]],
        n_columns=2,
        input_batch_size=2,
    )
    summary = driver.run_plan(store, "run", report=job.write_report)
    assert summary["sources"]["present"] == 3
    assert [r["value"] for r in store.read_outputs("run")] == ["1-x", "2-y", "3-z"]
    assert store.committed("run") == frozenset({0, 1})
    assert "<html" in (tmp_path / "run" / "report.html").read_text().lower()


def test_several_output_ports_get_one_file_each(tmp_path) -> None:
    store = _store_local_plan(
        tmp_path, "engine_pipelines:TwoOutputs", list(range(7)), input_batch_size=4
    )
    driver.run_plan(store, "run")
    manifest = plain(store.manifest_record("run", 0))
    ports = manifest["outputs"]["ports"]
    assert len(ports) == 2
    first, second = ports
    assert [r["value"] for r in store.read_outputs("run", first)] == [x // 3 for x in range(7)]
    assert [r["value"] for r in store.read_outputs("run", second)] == [x % 3 for x in range(7)]
