"""Every run-store record is typed and versioned: a record that does not parse, or
carries a version this provider does not know, raises ``StoreError`` naming its URI
and the fix."""

from __future__ import annotations

import ast
import json
import pathlib
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_rayorch.rayorch.errors import RayOrchError, StoreError
from airflow_provider_rayorch.runs.attempts import repair_record, repair_records, write_repair
from airflow_provider_rayorch.runs.boundary import plain
from airflow_provider_rayorch.runs.store import PlanRecord, RunStore

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

pytestmark = pytest.mark.timeout(30)

SOURCES = {"total": 2, "present": 1, "dropped": 0, "failed": 1, "suppressed": 0}
MANIFEST = {
    "run_id": "r",
    "pipeline": "m:F",
    "fingerprint": "f",
    "state": "failed",
    "microbatch": {"index": 0, "first_source": 0, "count": 2},
    "sources": SOURCES,
    "entities": {"doc": 2},
    "grains": {"dispatched": 2, "retried": 0, "suppressed": 0},
    "failures": [{"source": 1, "outcome": "failed", "cause": "doc[1]: bad"}],
    "outputs": {"uri": "/x/r/outputs/mb-00000", "rows": 1, "ports": ["out"]},
    "elapsed_s": 0.5,
    "attempt": 1,
    "files": {"out": "/x/r/outputs/mb-00000/out.parquet"},
    "committed_at": "2026-01-01T00:00:00+00:00",
}

# (file under the run, how to read it)
READERS: list[Any] = [
    pytest.param("plan.json", lambda s: s.read_plan("r"), id="plan"),
    pytest.param("manifests/mb-00000.json", lambda s: s.manifest_record("r", 0), id="manifest"),
    pytest.param("manifests/mb-00000.json", lambda s: s.manifest_records("r"), id="manifests"),
    pytest.param("run.json", lambda s: s.run_manifest_record("r"), id="run-manifest"),
    pytest.param("job_state.json", lambda s: s.job_state_record("r"), id="job-state"),
    pytest.param("repairs/mb-00000.json", lambda s: repair_record(s, "r", 0), id="repair"),
    pytest.param("repairs/mb-00000.json", lambda s: repair_records(s, "r"), id="repairs"),
]


#: file under the run -> how to read it
READ: dict[str, Callable[[RunStore], Any]] = {
    "plan.json": lambda s: s.read_plan("r"),
    "manifests/mb-00000.json": lambda s: s.manifest_record("r", 0),
    "run.json": lambda s: s.run_manifest_record("r"),
    "job_state.json": lambda s: s.job_state_record("r"),
    "repairs/mb-00000.json": lambda s: repair_record(s, "r", 0),
}


def _plant(root: Path, name: str, text: str) -> None:
    path = root / "r" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.mark.parametrize(("name", "read"), READERS)
def test_a_record_that_is_not_json_raises_store_error_naming_its_uri(
    tmp_path: Path, name: str, read: Callable[[RunStore], Any]
) -> None:
    _plant(tmp_path, name, "{half a record")
    with pytest.raises(StoreError) as err:
        read(RunStore(str(tmp_path)))
    message = str(err.value)
    assert str(tmp_path / "r" / name) in message
    assert "is not JSON" in message
    assert isinstance(err.value, RayOrchError)


@pytest.mark.parametrize(
    ("name", "record", "field"),
    [
        pytest.param("plan.json", {"run_id": "r", "version": 1}, "pipeline", id="plan-missing"),
        pytest.param(
            "plan.json",
            {"run_id": "r", "pipeline": "m:F", "fingerprint": "f", "sources": "a,b"},
            "sources",
            id="plan-wrong-type",
        ),
        pytest.param(
            "manifests/mb-00000.json", {**MANIFEST, "sources": "lots"}, "sources", id="manifest"
        ),
        pytest.param(
            "manifests/mb-00000.json",
            {**MANIFEST, "failures": [{"source": "seven", "outcome": "failed", "cause": "x"}]},
            "failures",
            id="manifest-failure-entry",
        ),
        pytest.param("run.json", {**MANIFEST, "state": 3}, "state", id="run-manifest"),
        pytest.param("job_state.json", {"message": "x"}, "job_status", id="job-state"),
        pytest.param(
            "repairs/mb-00000.json", {"index": "zero", "status": "running"}, "index", id="repair"
        ),
    ],
)
def test_a_record_with_wrong_or_missing_fields_raises_store_error(
    tmp_path: Path, name: str, record: dict[str, Any], field: str
) -> None:
    _plant(tmp_path, name, json.dumps(record))
    with pytest.raises(StoreError) as err:
        READ[name](RunStore(str(tmp_path)))
    message = str(err.value)
    assert str(tmp_path / "r" / name) in message
    assert field in message


@pytest.mark.parametrize(
    ("name", "record"),
    [
        pytest.param("plan.json", {"version": 7}, id="plan"),
        pytest.param("manifests/mb-00000.json", {**MANIFEST, "schema_version": 7}, id="manifest"),
        pytest.param("run.json", {**MANIFEST, "schema_version": 7}, id="run-manifest"),
        pytest.param(
            "job_state.json", {"job_status": "RUNNING", "schema_version": 7}, id="job-state"
        ),
        pytest.param(
            "repairs/mb-00000.json",
            {"index": 0, "status": "running", "schema_version": 7},
            id="repair",
        ),
    ],
)
def test_an_unknown_schema_version_says_to_upgrade(
    tmp_path: Path, name: str, record: dict[str, Any]
) -> None:
    _plant(tmp_path, name, json.dumps(record))
    with pytest.raises(StoreError, match=r"version 7.*upgrade") as err:
        READ[name](RunStore(str(tmp_path)))
    assert str(tmp_path / "r" / name) in str(err.value)


def test_records_written_before_schema_versions_still_read(tmp_path: Path) -> None:
    """Manifests, run manifests, job states and repair records of the previous release
    carry no version: they read as version 1, in the same shape."""
    legacy_plan = {
        "run_id": "r",
        "pipeline": "m:F",
        "fingerprint": "f",
        "sources": [1, 2],
        "input_batch_size": None,
        "max_active_input_batches": 1,
        "pipeline_kwargs": {},
        "max_failed_ratio": 0.0,
        "backend": "ray",
        "ray_init_kwargs": {},
        "created_at": "",
        "version": 1,
        "n_columns": 1,
        "semantic_fingerprint": "",
        "semantic": {},
    }
    repair = {
        "index": 0,
        "attempt": 2,
        "job_id": "j",
        "status": "committed",
        "owner": "ti",
        "at": "2026-01-01T00:00:00+00:00",
        "message": None,
    }
    job_state = {"job_status": "FAILED", "message": "boom", "at": "2026-01-01T00:00:00+00:00"}
    _plant(tmp_path, "plan.json", json.dumps(legacy_plan))
    _plant(tmp_path, "manifests/mb-00000.json", json.dumps(MANIFEST))
    _plant(tmp_path, "run.json", json.dumps({**MANIFEST, "microbatches": []}))
    _plant(tmp_path, "job_state.json", json.dumps(job_state))
    _plant(tmp_path, "repairs/mb-00000.json", json.dumps(repair))
    store = RunStore(str(tmp_path))
    plan = store.read_plan("r")
    assert plan is not None
    assert plan.version == 1
    assert plan.columns() == [[1, 2]]
    assert plain(store.manifest_record("r", 0)) == MANIFEST
    assert plain(store.run_manifest_record("r")) == {**MANIFEST, "microbatches": []}
    assert plain(store.job_state_record("r")) == job_state
    assert plain(repair_record(store, "r", 0)) == repair
    assert [r.to_dict() for r in repair_records(store, "r")] == [repair]


def test_written_records_carry_their_schema_version_and_read_back_unchanged(
    tmp_path: Path,
) -> None:
    store = RunStore(str(tmp_path))
    store.commit_microbatch("r", 0, MANIFEST)
    store.write_run_manifest("r", {**MANIFEST, "repairs": [], "extra_key": {"grows": True}})
    write_repair(store, "r", 0, attempt=2, job_id="j", status="running", owner="ti")
    for name in ("manifests/mb-00000.json", "run.json", "repairs/mb-00000.json"):
        assert json.loads((tmp_path / "r" / name).read_text())["schema_version"] == 1
    assert plain(store.manifest_record("r", 0)) == MANIFEST
    assert plain(store.run_manifest_record("r"))["extra_key"] == {"grows": True}  # type: ignore[index]


def test_a_summary_that_breaks_the_contract_is_refused_on_write(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path))
    with pytest.raises(StoreError, match=r"sources.*nothing was written"):
        store.commit_microbatch("r", 0, {**MANIFEST, "sources": {"total": "two"}})
    with pytest.raises(StoreError, match=r"status.*nothing was written"):
        write_repair(store, "r", 0, attempt=2, status="half-done")
    assert repair_record(store, "r", 0) is None
    assert store.committed("r") == frozenset()


def test_plan_record_keeps_its_python_api() -> None:
    plan = PlanRecord(run_id="r", pipeline="m:F", fingerprint="f", sources=[1, 2, 3])
    again = PlanRecord.from_json(plan.to_json())
    assert again == plan
    assert again.batch_size == 3
    assert again.microbatches() == [{"index": 0, "first_source": 0, "count": 3}]
    with pytest.raises(StoreError, match="version 3"):
        PlanRecord.from_json(json.dumps({**json.loads(plan.to_json()), "version": 3}))


def test_attempts_uses_only_the_store_public_api() -> None:
    """attempts.py reads and writes records through RunStore's public record API."""
    import airflow_provider_rayorch.runs.attempts as attempts

    tree = ast.parse(pathlib.Path(attempts.__file__).read_text())
    private = sorted(
        {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Attribute | ast.Name)
            and "store" in ast.unparse(node.value)
        }
    )
    assert private == []


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(lambda s: s.commit_microbatch("r", 0, MANIFEST), id="manifest"),
        pytest.param(
            lambda s: s.write_outputs("r", 0, "out", 0, [("present", None, 1)]), id="outputs"
        ),
        pytest.param(lambda s: s.write_job_state("r", "RUNNING"), id="job-state"),
    ],
)
def test_an_unwritable_run_store_names_itself_and_the_setting(
    write: Callable[[RunStore], Any],
) -> None:
    store = RunStore("/proc/rayorch-runs")
    with pytest.raises(StoreError) as err:
        write(store)
    message = str(err.value)
    assert "/proc/rayorch-runs" in message
    assert "run_store" in message
    assert "connection" in message
